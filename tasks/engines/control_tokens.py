"""The served tokenizer's control tokens, read from the server, so a record's text can never forge one.

vLLM renders the chat template and tokenizes the result with special tokens on: a record that holds
`<|im_start|>system` opens a real system turn. A fixed list of look-alikes misses other models' markers
(DeepSeek's `<｜Assistant｜>`, Mistral's `[SYSTEM_PROMPT]`, Gemma's `<bos>`, Qwen3's `</think>`), so the
start-up check reads them from the served tokenizer itself through vLLM's `/tokenize` and `/detokenize`
(`/tokenizer_info` is off unless the server was launched with `--enable-tokenizer-info-endpoint`):

1. the vocabulary size: `/detokenize` answers "" for an id past the end, so a binary search finds it;
2. the text of the first and last `SCAN` ids, in one `/detokenize` call with a separator between them
   (added and special tokens sit at either end of every vocabulary above, after the base BPE pieces
   or before them);
3. of those that look like markup (`<...>` or `[...]`), the ones the tokenizer matches atomically
   whatever surrounds them: an added token is split out of the raw text before the pre-tokenizer runs,
   so it survives being glued to letters and to punctuation; an ordinary `<br>` piece does not.

`breaker(tokens)` then breaks each one found with an invisible word joiner after its first character.
llama-server answers an id past the end of its vocabulary with an error, not "", so its engine passes
the size its model list states (`n_vocab`) instead of the search. A server without `/tokenize`
(Ollama, llama-cpp-python) gets the floor, `plain`: every chat family's known markers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

SCAN = 1024  # ids read at each end of the vocabulary
MAX_VOCAB = 1 << 22  # upper bound of the vocabulary-size search (Gemma 3: 262,144)
SEPARATOR = "\n\u241e\n"  # ␞ between newlines: no tokenizer's control token holds it
WORD_JOINER = "\u2060"
_MARKUP = re.compile(r"^[<\[].*[>\]]$", re.DOTALL)
_GLUES = ("zq", "%")  # a letter glue and a punctuation glue: an ordinary piece fuses with one of them

Post = Callable[[str, dict[str, Any]], dict[str, Any]]  # (path, body) -> the server's JSON answer


def _tokens(post: Post, model: str, text: str) -> list[int]:
    answer = post("/tokenize", {"model": model, "prompt": text, "add_special_tokens": False})
    tokens = answer.get("tokens")
    return [t for t in tokens if isinstance(t, int)] if isinstance(tokens, list) else []


def _text(post: Post, model: str, ids: list[int]) -> str:
    return str(post("/detokenize", {"model": model, "tokens": ids}).get("prompt") or "")


def vocabulary_size(post: Post, model: str) -> int:
    """The first id that detokenizes to nothing: everything below it is the tokenizer's."""
    low, high = 0, MAX_VOCAB  # _text(low) is a token; high is past the end
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _text(post, model, [middle]) else (low, middle)
    return high


def served_control_tokens(post: Post, model: str, size: int | None = None) -> tuple[str, ...]:
    """Every control token of the served tokenizer found at the ends of its vocabulary, longest first;
    `size`, when the server states it, saves the search (and the ids past the end)."""
    size = size or vocabulary_size(post, model)
    ids = sorted(set(range(min(SCAN, size))) | set(range(max(0, size - SCAN), size)))
    separator = _tokens(post, model, SEPARATOR)
    batch = [*separator]
    for token in ids:
        batch += [token, *separator]
    pieces = _text(post, model, batch).split(SEPARATOR)[1:-1]
    if len(pieces) != len(ids):  # a piece that swallowed a separator: read them one by one
        pieces = [_text(post, model, [token]) for token in ids]
    found = set()
    for token, piece in zip(ids, pieces, strict=True):
        if len(piece) >= 3 and _MARKUP.match(piece) and _atomic(post, model, token, piece):
            found.add(piece)
    return tuple(sorted(found, key=lambda p: (-len(p), p)))


def _atomic(post: Post, model: str, token: int, piece: str) -> bool:
    return all(token in _tokens(post, model, f"{glue}{piece}{glue}") for glue in _GLUES)


# Strings that chat tokenizers read as control tokens even inside a message, per family: ChatML, Llama 3,
# Phi, Granite (`<|im_start|>`, `<|eot_id|>`, `<|end|>`); DeepSeek's full-width bars
# (`<｜Assistant｜>`, `<｜end▁of▁sentence｜>`); Llama 2 (`<s>`, `<<SYS>>`); Mistral's bracketed names
# (`[INST]`, `[SYSTEM_PROMPT]`, `[TOOL_CALLS]`); Gemma (`<bos>`, `<eos>`, `<start_of_turn>`); Qwen3
# (`<think>`, `</think>`, `<tool_call>`); StarCoder-style names (`<file_sep>`, `<reponame>`).
_MISTRAL = (
    "INST",
    "SYSTEM_PROMPT",
    "AVAILABLE_TOOLS",
    "TOOL_RESULTS",
    "TOOL_CALLS",
    "TOOL_CONTENT",
    "IMG",
    "IMG_BREAK",
    "IMG_END",
    "PREFIX",
    "MIDDLE",
    "SUFFIX",
    "ARGS",
    "CALL_ID",
    "THINK",
)
_CONTROL_LIKE = re.compile(
    r"<\|[^<>|\s]{1,40}\|>"  # <|im_start|>
    r"|<\uff5c[^<>\uff5c\s]{1,40}\uff5c>"  # <｜Assistant｜>
    rf"|\[/?(?:{'|'.join(_MISTRAL)})\]"  # [SYSTEM_PROMPT]
    r"|<</?SYS>>|</?(?:s|bos|eos|pad|unk|mask|think)>"  # <<SYS>>, <bos>, </think>
    r"|</?[a-z]+_[a-z_]+>|<(?:reponame|filename)>"  # <start_of_turn>, </tool_call>
)


def plain(content: str) -> str:
    """`content` with every chat family's known control-token markers broken by an invisible word
    joiner after the first character: the floor, whether or not the served tokenizer could be read."""
    return _CONTROL_LIKE.sub(lambda m: m[0][0] + WORD_JOINER + m[0][1:], content)


def breaker(tokens: tuple[str, ...]) -> Callable[[str], str]:
    """A function that breaks every one of `tokens` in a text (a word joiner after the first character)."""
    if not tokens:
        return lambda content: content
    pattern = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))
    return lambda content: pattern.sub(lambda m: m[0][0] + WORD_JOINER + m[0][1:], content)
