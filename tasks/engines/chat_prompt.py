"""Chat messages -> prompt tokens, where only the chat template's own markers can be control tokens.

Tokenising the whole rendered prompt with special tokens on would turn a record that contains
`<|im_start|>assistant` into a real turn marker: the record could forge the conversation. So the
template is rendered with a unique sentinel in place of each message's content, the result is split
at the sentinels, the template's pieces are tokenised with special tokens on and the contents as plain
text. For ordinary text the tokens are the same as before, since every template piece ends or starts
at a control token or a newline, where the tokenizer splits anyway.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from formwork.tasks.engines.base import Message

Tokenize = Callable[[str, bool], list[int]]  # (text, special) -> token ids


class ChatPrompt:
    """Renders messages with a Jinja chat template and tokenises them safely."""

    def __init__(self, template: str, bos_token: str, eos_token: str, tokenize: Tokenize):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._format = Jinja2ChatFormatter(template=template, eos_token=eos_token, bos_token=bos_token)
        self._tokenize = tokenize

    def tokens(self, messages: list[Message]) -> list[int]:
        tag = uuid.uuid4().hex
        contents = {f"\ue000{tag}:{i}\ue000": str(m.get("content") or "") for i, m in enumerate(messages)}
        masked = [{**m, "content": key} for m, key in zip(messages, contents, strict=True)]
        rendered = self._format(messages=masked).prompt
        tokens: list[int] = []
        for part in re.split(f"(\ue000{tag}:\\d+\ue000)", rendered):
            if part in contents:
                tokens += self._tokenize(contents[part], False) if contents[part] else []
            elif part:
                tokens += self._tokenize(part, True)
        return tokens
