"""Multi-turn rollouts, token-in/token-out: the sequence a model trains on is exactly the token ids it
sampled for each assistant turn plus the environment's token ids for each observation, nothing in it
decoded and encoded again (docs/environments.md, "What happens in a conversation").

`Trajectory.mask` is 1 over the model's tokens and 0 over the environment's: the trainer's log-probs,
advantages, KL and mismatch correction see model tokens only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from rlvr.config import SamplingConfig
from rlvr.envs.env import Conversation, EnvLimits
from rlvr.models.engines import Sampler
from rlvr.models.sampling import encode_prompts

__all__ = ["ChatRenderer", "RenderError", "Trajectory", "run_conversations"]

_PREFIX = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]


class RenderError(ValueError):
    """A chat template whose rendering of an observation does not extend the conversation's."""


class ChatRenderer:
    """Token ids of a conversation's first prompt and of each observation, through the chat template."""

    def __init__(self, tok: Any, end_ids: Sequence[int], system_prompt: str | None = None) -> None:
        self.tok, self.end_ids, self.system_prompt = tok, frozenset(end_ids), system_prompt

    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> list[int]:
        if self.system_prompt is not None and (not messages or messages[0]["role"] != "system"):
            messages = [{"role": "system", "content": self.system_prompt}, *messages]
        text = self.tok.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=gen)
        return encode_prompts(self.tok, [text])[0]

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The first prompt: the messages rendered with a generation prompt."""
        return self._render(messages, tools, True)

    def observation(
        self, tool_messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *, closed: bool = True
    ) -> list[int]:
        """The environment's tokens after an assistant turn: what the template writes behind the turn's
        end-of-turn token, the tool messages, and the next generation prompt. A turn that a stop string
        ended at the call's end (`closed=False`, no end-of-turn token sampled) gets the template's
        end-of-turn token first, as the environment's."""
        base = self._render(_PREFIX, tools, False)
        full = self._render([*_PREFIX, *tool_messages], tools, True)
        if full[: len(base)] != base:
            raise RenderError("the chat template renders tool messages by changing the turns before them")
        ends = [i for i, t in enumerate(base) if t in self.end_ids]
        if not ends:
            raise RenderError("the chat template ends no assistant turn with an end-of-turn token")
        return base[ends[-1] + (1 if closed else 0) :] + full[len(base) :]


@dataclass
class Trajectory:
    """One conversation as the trainer sees it."""

    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)  # every token after the prompt, in order
    mask: list[int] = field(default_factory=list)  # 1: sampled by the model; 0: the environment's
    turns: list[tuple[int, int]] = field(default_factory=list)  # (start, end) in `ids` of each assistant turn
    truncated: bool = False  # a turn was cut at its token limit, or the budget ran out mid-conversation
    entropy_sum: float = 0.0  # over model tokens (mean: `entropy`)
    logprobs: list[float] | None = None  # the engine's log-prob of each token (vLLM); 0 on env tokens
    conversation: Conversation | None = None
    engine_inputs: list[list[int]] = field(default_factory=list)  # the prompt the engine got each turn (tests)

    @property
    def model_tokens(self) -> int:
        return sum(self.mask)

    @property
    def env_tokens(self) -> int:
        return len(self.mask) - sum(self.mask)

    @property
    def entropy(self) -> float:
        return self.entropy_sum / max(1, self.model_tokens)


def run_conversations(
    model: Any,
    tok: Any,
    conversations: list[Conversation],
    sampling: SamplingConfig,
    *,
    end_ids: Sequence[int],
    sampler: Sampler | None = None,
    renderer: ChatRenderer | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    bf16: bool = False,
    keep_engine_inputs: bool = False,
    decode: Callable[[list[int]], str] | None = None,
    greedy: bool = False,
    row_offset: int = 0,
    total_rows: int | None = None,
    any_live: Callable[[bool], bool] | None = None,
) -> list[Trajectory]:
    """Run the conversations to their end, all turns batched across conversations; one trajectory
    each, in order. Each turn samples at most the conversation's per-turn limit and what is left of
    its total budget (`EnvLimits`); the turn's text (decoded, special tokens skipped) goes to
    `Conversation.step`, whose tool messages come back as observation tokens.

    Data parallelism: conversation i is row `row_offset + i` of `total_rows`, and its tokens depend on
    that index only, so a rank running its block draws what one process running them all draws;
    `any_live(flag)` (`Dist.any`) keeps every rank sampling, with no rows if need be, until no rank
    has a conversation left, so the ranks' random streams stay in step."""
    sampler = sampler or Sampler("hf")
    renderer = renderer or ChatRenderer(tok, end_ids)
    decode = decode or (lambda ids: tok.decode(ids, skip_special_tokens=True))
    ends = frozenset(end_ids)
    trajs = [Trajectory(renderer.prompt(c.messages, c.schemas()), conversation=c) for c in conversations]
    gen = generator if generator is not None else torch.Generator().manual_seed(seed)
    while True:
        live = [i for i, c in enumerate(conversations) if not c.done]
        caps = [_turn_cap(conversations[i].limits, sampling, len(trajs[i].ids)) for i in live]
        for i, cap in zip(live, caps, strict=True):
            if cap <= 0:
                trajs[i].truncated = True
                conversations[i].end("budget")
        live = [i for i, cap in zip(live, caps, strict=True) if cap > 0]
        caps = [cap for cap in caps if cap > 0]
        if not (any_live(bool(live)) if any_live is not None else live):
            return trajs
        prompts = [trajs[i].prompt_ids + trajs[i].ids for i in live]
        s = sampling.model_copy(update={"max_new_tokens": max(caps, default=sampling.max_new_tokens)})
        comp = sampler.sample(
            model,
            tok,
            prompts,
            1,
            s,
            end_ids=sorted(ends),
            generator=gen,
            entropy=True,
            bf16=bf16,
            greedy=greedy,
            rows=[row_offset + i for i in live],
            total_rows=total_rows or len(conversations),
        )
        for k, i in enumerate(live):
            t, c = trajs[i], conversations[i]
            if keep_engine_inputs:
                t.engine_inputs.append(prompts[k])
            turn = comp.tokens[k][: caps[k]]  # sampling is autoregressive: a shorter cap draws the same prefix
            t.turns.append((len(t.ids), len(t.ids) + len(turn)))
            t.ids += turn
            t.mask += [1] * len(turn)
            engine_logp = getattr(comp, "logprobs", None)  # vLLM: what the mismatch correction compares with
            if engine_logp is not None:
                t.logprobs = (t.logprobs or [0.0] * (len(t.ids) - len(turn))) + list(engine_logp[k][: len(turn)])
            ent = comp.entropy[k] if comp.entropy else float("nan")
            t.entropy_sum += ent * len(turn) if ent == ent else 0.0
            if not turn or comp.truncated[k] or len(comp.tokens[k]) > caps[k]:  # cut at its limit: nothing to answer
                t.truncated = True
                c.messages.append({"role": "assistant", "content": decode(turn)})
                c.end("truncated")
                continue
            observation = c.step(decode(turn))
            if observation is None:
                continue
            obs = renderer.observation(observation, c.schemas(), closed=turn[-1] in ends)
            if len(t.ids) + len(obs) > c.limits.max_total_tokens:
                t.truncated = True
                c.end("budget")
                continue
            t.ids += obs
            t.mask += [0] * len(obs)
            if t.logprobs is not None:
                t.logprobs += [0.0] * len(obs)


def _turn_cap(limits: EnvLimits, sampling: SamplingConfig, used: int) -> int:
    per_turn = limits.max_turn_tokens or sampling.max_new_tokens
    return min(per_turn, limits.max_total_tokens - used)
