"""Debian's headless Chromium driven by selenium, for the pages' tests (review, audit, settle).

`chromium(downloads)` starts one, with downloads (the audit page's export) saved into `downloads`
without asking; the test is skipped with install.sh's reason where no Chromium can be installed. The
`browser` fixture (a plugin of tests/conftest.py) gives a test one with its downloads in its tmp_path,
and `press` types keys into the page as a person does.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def chromium(downloads: Path | None = None, size: str = "1280,900") -> Any:
    """A headless Chromium (selenium's driver), `downloads` the folder its downloads go to."""
    found = subprocess.run([ROOT / "deploy/browser/install.sh"], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"no headless Chromium: {found.stderr.strip()[-300:]}")
    binary, driver_path = found.stdout.split()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 f"--window-size={size}"):  # fmt: skip
        options.add_argument(flag)
    if downloads is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                                  "download.prompt_for_download": False})  # fmt: skip
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    if downloads is not None:
        allow = {"behavior": "allow", "downloadPath": str(downloads)}
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", allow)
    return driver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium for one test, its downloads in the test's `downloads` folder."""
    driver = chromium(tmp_path / "downloads")
    yield driver
    driver.quit()


def press(browser: Any, keys: str) -> None:
    """Type `keys` into the focused page, as a person at the keyboard does."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(keys).perform()
