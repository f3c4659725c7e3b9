"""Sampling on tpu over a padded request count.

vLLM's sampler runs eager ops on [requests, vocab] tensors and takes a
different op sequence for greedy, random, top-k/top-p and seeded batches;
each request count is a new shape, so each new count compiled a dozen
programs while serving. Here the logits come padded to a request bucket
(a power of two, TpuModelRunner._prepare_inputs), the per-request
parameters are padded on the host to the same bucket, and every batch runs
one of three op sequences (greedy only; random; random with top-k/top-p),
each with or without logprobs, whose programs the worker compiles for every
bucket at start-up (warm_up). The results come back to the host whole and
are cut to the real requests there.

The maths is vLLM's own (Sampler and its top-k/top-p and exponential-race
sampling, reused where they take tensors), so tokens and logprobs are the
ones vLLM's sampler gives. Two layout changes keep shapes fixed:
- a seeded request's noise row is drawn as a fresh [vocab] tensor from its
  generator and the rows are stacked, instead of written into row i of the
  batch's noise (a write at row i is a program per i);
- the top logprobs are gathered for the largest count any request may ask
  (max_logprobs) and cut on the host to the batch's largest;
- logit_bias and min_tokens (vLLM's built-in logits processors) and bad
  words become one list of (row, token, value) additions padded to a few
  sizes, instead of the processors' index tensors, as long as the batch's
  list (a program per length), and bad words' writes at each (row, token)
  (a program per pair); which bad words apply is decided on the host, from
  the output tokens, as vLLM does;
- allowed token ids mask the bucket's rows of the input batch's whole
  [max requests, vocab] mask, not a [requests, vocab] slice of it;
- penalties (repetition, frequency, presence) count each request's tokens
  from a [bucket, max_model_len] table built on the host (prompt then output
  tokens, padded with vocab_size), not from vLLM's tensors padded to the
  batch's longest prompt and output (a program per length).

Batches that use what this does not cover (logprob token ids, other
logprobs modes, all-vocab logprobs, thinking budgets) go through vLLM's own
sampler on the real rows, which may compile.
"""
from __future__ import annotations

import numpy as np
import torch
from vllm.v1.outputs import LogprobsTensors, SamplerOutput
from vllm.v1.sample.logits_processor.builtin import (LogitBiasLogitsProcessor,
                                                     MinTokensLogitsProcessor)
from vllm.v1.sample.metadata import SamplingMetadata
from vllm.v1.sample.ops.bad_words import apply_bad_words
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch
from vllm.v1.sample.sampler import _SAMPLING_EPS, Sampler


# Sizes the logit_bias / min_tokens / bad words additions of a batch are
# padded to; a batch with more goes through the processors themselves.
UPDATE_BUCKETS = (32, 256, 4096)


def request_bucket(n: int, max_reqs: int) -> int:
    """The padded request count for n requests: the next power of two, at
    most max_reqs."""
    return min(1 << max(0, int(n) - 1).bit_length(), max_reqs)


def request_buckets(max_reqs: int) -> list[int]:
    """Every value request_bucket takes up to max_reqs."""
    return sorted({request_bucket(n, max_reqs) for n in range(1, max_reqs + 1)})


class PaddedSampler:
    def __init__(self, sampler: Sampler, vocab_size: int, max_logprobs: int, device):
        self.sampler = sampler
        self.vocab = vocab_size
        # max_logprobs -1 lets a request ask for the whole vocabulary.
        self.k = vocab_size if max_logprobs < 0 else max(1, min(max_logprobs, vocab_size))
        self.device = device

    def covers(self, md: SamplingMetadata) -> bool:
        """Whether this batch's sampling runs here (else vLLM's sampler)."""
        k = md.max_num_logprobs
        holder = md.thinking_budget_state_holder
        return (self.sampler.logprobs_mode == "raw_logprobs"
                and not md.logprob_token_ids and (k is None or 0 <= k <= self.k)
                and (holder is None or not holder.has_tracked_requests()))

    def sample(self, logits: torch.Tensor, md: SamplingMetadata, batch, num_reqs: int,
               top_k: bool, top_p: bool) -> SamplerOutput:
        """Samples logits [bucket, vocab] (rows past num_reqs are padding);
        returns the real rows' tokens and logprobs as host tensors."""
        padded = logits.shape[0]
        params = self._params(batch, num_reqs, padded, md.all_greedy, top_k, top_p)
        penalties = None if md.no_penalties else self._penalties(batch, md, num_reqs, padded)
        updates = self._logit_updates(md.logitsprocs.non_argmax_invariant,
                                      md.bad_words_token_ids, md.output_token_ids)
        # the input batch's whole mask (copy_slice uploads it whole), cut to
        # the bucket; padding rows may hold a finished request's mask
        allowed = (None if md.allowed_token_ids_mask is None
                   else batch.allowed_token_ids_mask[:padded])
        sampled, logprobs = self._run(logits, md, params, num_reqs, padded, penalties, updates,
                                      allowed)
        tokens = sampled.cpu()[:num_reqs]
        lp = None
        if logprobs is not None:
            cols = md.max_num_logprobs + 1
            ids, vals, ranks = (t.cpu() for t in logprobs)
            lp = LogprobsTensors(ids[:num_reqs, :cols], vals[:num_reqs, :cols], ranks[:num_reqs])
        return SamplerOutput(sampled_token_ids=tokens, logprobs_tensors=lp)

    def _params(self, batch, num_reqs, padded, all_greedy, top_k, top_p):
        """The per-request parameters padded to the bucket on the host (the
        padding rows sample greedily, with no top-k/top-p), uploaded whole."""
        if all_greedy:
            return None
        temp = np.ones(padded, dtype=np.float32)
        temp[:num_reqs] = batch.temperature_cpu[:num_reqs]
        out = {"temperature": torch.from_numpy(temp).to(self.device)}
        if top_k or top_p:
            k = np.full(padded, self.vocab, dtype=np.int32)
            p = np.ones(padded, dtype=np.float32)
            k[:num_reqs] = batch.top_k_cpu[:num_reqs]
            p[:num_reqs] = batch.top_p_cpu[:num_reqs]
            out["top_k"] = torch.from_numpy(k).to(self.device)
            out["top_p"] = torch.from_numpy(p).to(self.device)
        return out

    def _penalties(self, batch, md, num_reqs, padded):
        """Each request's prompt and output tokens in a [padded,
        max_model_len] table (vocab_size past them), which of them are
        output tokens, and the three penalties (neutral on padding rows),
        uploaded whole."""
        width = batch.token_ids_cpu.shape[1]
        tokens = np.full((padded, width), self.vocab, dtype=np.int64)
        is_out = np.zeros((padded, width), dtype=np.float32)
        for i in range(num_reqs):
            n = int(batch.num_prompt_tokens[i])
            tokens[i, :n] = batch.token_ids_cpu[i, :n]
            out = np.asarray(md.output_token_ids[i], dtype=np.int64)[: width - n]
            # -1: a placeholder vLLM may leave for an async step (as vLLM)
            tokens[i, n: n + len(out)] = np.where(out < 0, self.vocab, out)
            is_out[i, n: n + len(out)] = 1
        freq = np.zeros(padded, dtype=np.float32)
        pres = np.zeros(padded, dtype=np.float32)
        rep = np.ones(padded, dtype=np.float32)
        freq[:num_reqs] = batch.frequency_penalties_cpu[:num_reqs]
        pres[:num_reqs] = batch.presence_penalties_cpu[:num_reqs]
        rep[:num_reqs] = batch.repetition_penalties_cpu[:num_reqs]
        return {k: torch.from_numpy(v).to(self.device) for k, v in
                (("tokens", tokens), ("is_out", is_out), ("frequency", freq),
                 ("presence", pres), ("repetition", rep))}

    def _logit_updates(self, procs, bad_words=None, outputs=None, size=None):
        """vLLM's logit_bias and min_tokens processors and bad words as one
        padded list of additions to the logits: (row, token, value) tensors,
        the padding adding 0 at (0, 0); a min_tokens stop token or a bad
        word's last token adds -inf (vLLM sets -inf). {} when there is
        nothing to add; None when a processor is not one of these two (or
        restores structured output's stop tokens) or the list is longer than
        UPDATE_BUCKETS: then the processors and vLLM's apply_bad_words run
        themselves. bad_words: {row: [token ids]}, outputs: each row's
        output tokens (SamplingMetadata's). size: pad to this instead
        (warm-up)."""
        rows, toks, vals = [], [], []
        for r, words in (bad_words or {}).items():
            past = outputs[r]
            for word in words:
                # vLLM's rule: the word's last token is banned when the
                # output so far ends with the rest of the word
                n = len(word) - 1
                if n > len(past) or word[-1] >= self.vocab:
                    continue  # too long yet; a token past the logits
                if n == 0 or list(past[-n:]) == list(word[:n]):
                    rows.append(r)
                    toks.append(word[-1])
                    vals.append(-np.inf)
        for proc in procs:
            if isinstance(proc, LogitBiasLogitsProcessor):
                for r, bias in proc.biases.items():
                    rows += [r] * len(bias)
                    toks += list(bias.keys())
                    vals += list(bias.values())
            elif isinstance(proc, MinTokensLogitsProcessor):
                for r, (_, _, stops, structured) in proc.min_toks.items():
                    if structured:
                        return None
                    rows += [r] * len(stops)
                    toks += list(stops)
                    vals += [-np.inf] * len(stops)
            else:
                return None
        if not rows and size is None:
            return {}
        size = size or next((b for b in UPDATE_BUCKETS if b >= len(rows)), None)
        if size is None:
            return None
        row = np.zeros(size, dtype=np.int64)
        tok = np.zeros(size, dtype=np.int64)
        add = np.zeros(size, dtype=np.float32)
        row[: len(rows)] = rows
        tok[: len(rows)] = toks
        add[: len(rows)] = vals
        return {k: torch.from_numpy(v).to(self.device)
                for k, v in (("row", row), ("token", tok), ("value", add))}

    def _apply_penalties(self, logits, pen):
        """vLLM's apply_penalties on the padded table: repetition scales the
        logits of tokens seen in the prompt or output (divided where
        positive, multiplied elsewhere), then frequency and presence
        subtract per output count and per output token seen."""
        rows = logits.shape[0]
        tokens = pen["tokens"]
        seen = torch.zeros(rows, self.vocab + 1, dtype=torch.float32, device=logits.device)
        seen = seen.scatter_add(1, tokens, torch.ones_like(pen["is_out"]))[:, : self.vocab] > 0
        counts = torch.zeros(rows, self.vocab + 1, dtype=torch.float32, device=logits.device)
        counts = counts.scatter_add(1, tokens, pen["is_out"])[:, : self.vocab]
        rep = torch.where(seen, pen["repetition"].unsqueeze(1), 1.0)
        logits = logits * torch.where(logits > 0, 1.0 / rep, rep)
        logits = logits - pen["frequency"].unsqueeze(1) * counts
        return logits - pen["presence"].unsqueeze(1) * (counts > 0)

    def _run(self, logits, md, params, num_reqs, padded, penalties=None, updates=None,
             allowed=None):
        s = self.sampler
        raw = s.compute_logprobs(logits) if md.max_num_logprobs is not None else None
        logits = logits.to(torch.float32)
        if allowed is not None:
            logits = logits.masked_fill(allowed, float("-inf"))
        # bad words, min_tokens and logit_bias act on the rows they name
        # (none when no request uses them).
        if updates is None:
            if md.bad_words_token_ids:
                logits = logits.clone()  # vLLM's writes in place
                apply_bad_words(logits, md.bad_words_token_ids, md.output_token_ids)
            for proc in md.logitsprocs.non_argmax_invariant:
                logits = proc.apply(logits)
        elif updates:
            logits = logits.index_put((updates["row"], updates["token"]), updates["value"],
                                      accumulate=True)
        if penalties is not None:
            logits = self._apply_penalties(logits, penalties)
        greedy = logits.argmax(dim=-1).view(-1)
        if params is None:
            sampled = greedy
        else:
            temp = params["temperature"]
            scaled = logits / torch.where(temp < _SAMPLING_EPS, 1.0, temp).unsqueeze(1)
            for proc in md.logitsprocs.argmax_invariant:  # min_p
                scaled = proc.apply(scaled)
            if "top_k" in params:
                scaled = apply_top_k_top_p_pytorch(scaled, params["top_k"], params["top_p"])
            probs = scaled.softmax(dim=-1, dtype=torch.float32)
            q = self._noise(probs, {i: g for i, g in md.generators.items() if i < num_reqs})
            random = probs.div(q).argmax(dim=-1).view(-1)
            sampled = torch.where(temp < _SAMPLING_EPS, greedy, random)
        sampled = sampled.long()
        logprobs = None
        if raw is not None:
            t = s.gather_logprobs(raw, self.k, token_ids=sampled)
            logprobs = (t.logprob_token_ids, t.logprobs, t.selected_token_ranks)
        return sampled.to(torch.int32).unsqueeze(-1), logprobs

    def _noise(self, probs, generators):
        """Exponential noise for the race that picks each row's token: one
        draw for the batch, or, when some requests have their own seeded
        generator, one fresh [vocab] draw per row (from its generator, else
        the device's) stacked; each request's draws depend only on its
        generator, whatever else is in the batch."""
        q = torch.empty_like(probs)
        if not generators:
            return q.exponential_()
        rows = [torch.empty(probs.shape[1], dtype=probs.dtype, device=probs.device)
                .exponential_(generator=generators.get(i)) for i in range(probs.shape[0])]
        return torch.stack(rows)

    def warm_up(self, logits: torch.Tensor, logitsprocs, max_model_len: int,
                max_reqs: int) -> None:
        """Runs every op sequence sample() may take on logits of this
        bucket (penalties on a table max_model_len wide, the input batch's
        width; allowed tokens from a mask of max_reqs rows, the input
        batch's), so that their programs are compiled before serving."""
        padded = logits.shape[0]
        gen = torch.Generator(device=self.device)
        gen.manual_seed(0)

        class _Batch:  # the host arrays sample() reads from the input batch
            temperature_cpu = np.full(padded, 0.7, dtype=np.float32)
            top_k_cpu = np.full(padded, 5, dtype=np.int32)
            top_p_cpu = np.full(padded, 0.9, dtype=np.float32)
            token_ids_cpu = np.zeros((padded, max_model_len), dtype=np.int32)
            num_prompt_tokens = np.ones(padded, dtype=np.int32)
            frequency_penalties_cpu = np.full(padded, 0.5, dtype=np.float32)
            presence_penalties_cpu = np.full(padded, 0.5, dtype=np.float32)
            repetition_penalties_cpu = np.full(padded, 1.2, dtype=np.float32)

        _Batch.temperature_cpu[0] = 0.0  # a greedy row among random ones
        for all_greedy, topkp, generators, k, no_penalties in (
                (True, False, {}, self.k, True), (False, True, {0: gen}, self.k, True),
                (False, False, {}, None, True), (True, False, {}, None, False)):
            md = SamplingMetadata(
                temperature=None, all_greedy=all_greedy, all_random=False, top_p=None,
                top_k=None, generators=generators, max_num_logprobs=k,
                no_penalties=no_penalties, prompt_token_ids=None, frequency_penalties=None,
                presence_penalties=None, repetition_penalties=None,
                output_token_ids=[[1]] * padded, allowed_token_ids_mask=None,
                bad_words_token_ids={}, logitsprocs=logitsprocs)
            self.sample(logits, md, _Batch, padded, topkp, topkp)
        # logit_bias / min_tokens / bad words additions at each padded size
        for size in UPDATE_BUCKETS:
            self._run(logits, md, None, padded, padded, None,
                      self._logit_updates([], size=size))
        # allowed token ids: the bucket's rows of the batch's whole mask
        mask = torch.zeros(max_reqs, self.vocab, dtype=torch.bool, device=self.device)
        self._run(logits, md, None, padded, padded, allowed=mask[:padded])
