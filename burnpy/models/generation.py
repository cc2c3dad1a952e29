"""Text generation for the causal LMs (transformers' ``generate``: greedy or sampled, with
temperature, top-k and top-p, stopping at end-of-sequence tokens, left-padded batches) on the
inference path with a KV cache, and the causal LM loss."""

from __future__ import annotations

from typing import Any

import numpy as np

from burnpy.backend.errors import InvalidArgumentError, ShapeError
from burnpy.models.cache import DynamicCache
from burnpy.models.modeling import PreTrainedModel
from burnpy.models.outputs import CausalLMOutputWithPast
from burnpy.nn import functional as F
from burnpy.nn.linear import Linear
from burnpy.tensor import Tensor


def causal_lm_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross entropy of each position's logits against the next label (labels ``-100``
    are ignored), computed in at least float32, as transformers' causal LM loss."""
    v = logits.shape[-1]
    if labels.shape != logits.shape[:-1]:
        raise ShapeError(f"causal LM loss: labels must be [batch, seq] = "
                         f"{list(logits.shape[:-1])}, got {list(labels.shape)}")
    if logits.dtype.itemsize < 4:
        logits = logits.float()
    return F.cross_entropy(logits[:, :-1].reshape(-1, v), labels[:, 1:].reshape(-1),
                           ignore_index=-100)


def _host_ints(op: str, name: str, value: Tensor | Any) -> np.ndarray:
    """``value`` (a Tensor or array-like of ints) as a ``[batch, seq]`` int64 host array."""
    arr = value.into_data().array if isinstance(value, Tensor) else np.asarray(value)
    if arr.ndim != 2 or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise ShapeError(f"{op}: {name} must be a 2-d int tensor [batch, seq], got "
                         f"{list(arr.shape)} {arr.dtype}")
    return arr.astype(np.int64)


def _filtered(logits: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """transformers' sampling warpers in its order (temperature, top-k, top-p) on host
    ``[batch, vocab]`` logits: filtered ones become -inf."""
    logits = logits / temperature
    if 0 < top_k < logits.shape[-1]:
        kth = np.sort(logits, axis=-1)[:, -top_k][:, None]
        logits = np.where(logits < kth, -np.inf, logits)
    if top_p < 1.0:
        order = np.argsort(logits, axis=-1, kind="stable")
        ordered = np.take_along_axis(logits, order, -1)
        probs = np.exp(ordered - ordered[:, -1:])
        cumulative = np.cumsum(probs / probs.sum(-1, keepdims=True), -1)
        drop = cumulative <= 1.0 - top_p
        drop[:, -1] = False  # the most likely token always stays
        np.put_along_axis(logits, order, np.where(drop, -np.inf, ordered), -1)
    return logits


class GenerationMixin(PreTrainedModel):
    """A causal LM: a base model (the attribute named ``base_model_prefix``) and ``lm_head``;
    its ``forward`` gives next-token logits (``CausalLMOutputWithPast``) and takes a
    ``DynamicCache``, ``position_ids`` and ``logits_to_keep``."""

    lm_head: Linear

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None, past_key_values: DynamicCache | None = None,
                use_cache: bool = False, output_hidden_states: bool = False,
                labels: Tensor | None = None, logits_to_keep: int = 0) -> CausalLMOutputWithPast:
        """transformers' ``*ForCausalLM.forward``: logits of every position (of the last
        ``logits_to_keep`` when nonzero) and, with ``labels``, the shifted cross entropy."""
        base = getattr(self, self.base_model_prefix)
        out = base(input_ids, attention_mask, position_ids, past_key_values, use_cache,
                   output_hidden_states)
        h = out.last_hidden_state
        logits = self.lm_head(h[:, -logits_to_keep:] if logits_to_keep else h)
        return CausalLMOutputWithPast(
            logits, None if labels is None else causal_lm_loss(logits, labels),
            out.past_key_values, out.hidden_states)

    def generate(self, input_ids: Tensor | Any, max_new_tokens: int = 20,
                 do_sample: bool = False, temperature: float = 1.0, top_k: int = 50,
                 top_p: float = 1.0, eos_token_id: int | list[int] | None = None,
                 attention_mask: Tensor | Any | None = None,
                 pad_token_id: int | None = None) -> Tensor:
        """The prompts ``input_ids [batch, seq]`` continued by up to ``max_new_tokens`` tokens
        (transformers' ``generate``): greedy, or sampled with ``do_sample``; a row that emits
        ``eos_token_id`` (the config's when None) is continued with ``pad_token_id`` until all
        have. Left-padded prompts take ``attention_mask`` (0 on padding). Runs untracked, on
        the inner backend of an Autodiff model (``valid()``), feeding one token per step."""
        op = f"{type(self).__name__}.generate"
        ids = _host_ints(op, "input_ids", input_ids)
        if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise InvalidArgumentError(f"{op}: max_new_tokens must be an int >= 0, got "
                                       f"{max_new_tokens!r}")
        if do_sample and not temperature > 0.0:
            raise InvalidArgumentError(f"{op}: temperature must be > 0, got {temperature}")
        if do_sample and not 0.0 < top_p <= 1.0:
            raise InvalidArgumentError(f"{op}: top_p must be in (0, 1], got {top_p}")
        if do_sample and top_k < 0:
            raise InvalidArgumentError(f"{op}: top_k must be >= 0, got {top_k}")
        mask = (np.ones_like(ids) if attention_mask is None
                else _host_ints(op, "attention_mask", attention_mask))
        if mask.shape != ids.shape or not np.isin(mask, (0, 1)).all():
            raise ShapeError(f"{op}: attention_mask must be 0/1 of input_ids' shape "
                             f"{list(ids.shape)}, got {list(mask.shape)}")
        eos = eos_token_id if eos_token_id is not None else self.config.eos_token_id
        stops = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        pad = pad_token_id if pad_token_id is not None else self.config.pad_token_id
        if pad is None and stops:
            pad = stops[0]
        model = self.valid() if self.backend is not None and self.backend.ad_enabled() else self
        assert isinstance(model, GenerationMixin)
        training = model.training
        model.eval()
        try:
            new = self._decode(model, ids, mask, max_new_tokens, do_sample, temperature, top_k,
                               top_p, stops, pad)
        finally:
            model.train(training)
        out = np.concatenate([ids, new], axis=1)
        like = input_ids if isinstance(input_ids, Tensor) else None
        b = like.backend if like is not None else model.backend
        return Tensor.from_data(out, backend=b, device=None if like is None else like.device,
                                dtype=like.dtype if like is not None
                                else b.int_dtype if b is not None else None)

    @staticmethod
    def _decode(model: GenerationMixin, ids: np.ndarray, mask: np.ndarray, steps: int,
                do_sample: bool, temperature: float, top_k: int, top_p: float,
                stops: list[int], pad: int | None) -> np.ndarray:
        """The new tokens ``[batch, <= steps]``: the prompt once, then one token per step."""
        b, dev = model.backend, model.device
        ints = b.int_dtype if b is not None else None  # int32 on WebGPU, which has no int64
        padded = not mask.all()
        positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0) * mask
        feed, done = ids, np.zeros(ids.shape[0], dtype=bool)
        cache = DynamicCache()
        tokens: list[np.ndarray] = []
        for _ in range(steps):
            out = model(Tensor.from_data(feed, backend=b, device=dev, dtype=ints),
                        attention_mask=Tensor.from_data(mask, backend=b, device=dev, dtype=ints)
                        if padded else None,
                        position_ids=Tensor.from_data(positions, backend=b, device=dev,
                                                      dtype=ints),
                        past_key_values=cache, use_cache=True, logits_to_keep=1)
            logits = out.logits[:, -1]
            if do_sample:
                host = _filtered(logits.into_data().array.astype(np.float64), temperature,
                                 top_k, top_p)
                probs = np.exp(host - host.max(-1, keepdims=True))
                probs /= probs.sum(-1, keepdims=True)
                chosen = Tensor.from_data(probs, backend=b, device=dev).multinomial(1)
                step = chosen.into_data().array.reshape(-1).astype(np.int64)
            else:
                step = logits.argmax(-1).into_data().array.astype(np.int64)
            if pad is not None:
                step = np.where(done, pad, step)
            tokens.append(step)
            done |= np.isin(step, stops)
            if done.all():
                break
            feed = step[:, None]
            mask = np.concatenate([mask, np.ones_like(feed)], axis=1)
            positions = positions[:, -1:] + 1
        return (np.stack(tokens, axis=1) if tokens
                else np.zeros((ids.shape[0], 0), dtype=np.int64))
