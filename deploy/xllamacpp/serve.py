"""Serve a GGUF with llama.cpp's own HTTP server, from the xllamacpp wheel; run with its venv's Python.

    ~/.cache/formwork/xllamacpp-venv/bin/python deploy/xllamacpp/serve.py --model FILE.gguf --port 8080

It answers llama-server's API (/v1/chat/completions, /v1/models, /props, /tokenize), which Formwork's
`openai` engine speaks as the `llama-server` dialect. The listener binds 127.0.0.1 unless --host says
otherwise. It runs until SIGTERM or SIGINT. This script imports only xllamacpp and the standard
library, since it runs in that venv, not in Formwork's.
"""

from __future__ import annotations

import argparse
import signal
import threading

import xllamacpp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ctx", type=int, default=2048, help="context per slot times --parallel")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=1, help="slots: requests decoded at once")
    parser.add_argument("--alias", default=None, help="the model name /v1/models lists")
    args = parser.parse_args()
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    if args.alias:
        params.model_alias = {args.alias}
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)  # loads the model, then listens on its own threads
    stop.wait()
    del server


if __name__ == "__main__":
    main()
