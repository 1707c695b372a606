"""rlvr.envs: tools from typed functions, tool-call parsing, failures as messages, the environment
protocol in TRL's convention, token-in/token-out rollouts on SmolLM2's template and on a Qwen-style
template with tools, and GRPO over whole conversations trained on the model's tokens only."""

from __future__ import annotations

import inspect
import json
import time
from pathlib import Path

import pytest
import torch

from rlvr.config import SamplingConfig
from rlvr.envs import (
    Conversation,
    EnvLimits,
    call_tool,
    env_tools,
    parse_tool_calls,
    run_conversations,
    tool_schema,
)

QWEN_STYLE = Path(__file__).resolve().parents[1] / "data" / "qwen_style_tools.jinja"


class Calculator:
    """An environment written in TRL's `environment_factory` convention, nothing rlvr-specific."""

    def reset(self, **row) -> str | None:
        self.calls, self.question = 0, row["question"]
        return row.get("hint")

    def multiply(self, a: float, b: float) -> float:
        """Multiply two numbers.

        Args:
            a: the first factor
            b: the second factor
        """
        self.calls += 1
        return a * b

    def fail(self, x: int) -> int:
        """Always fails.

        Args:
            x: anything
        """
        raise RuntimeError("boom")

    def slow(self) -> str:
        """Takes its time."""
        time.sleep(3)
        return "late"

    def get_reward(self) -> float:
        return float(self.calls > 0)


def _call(name: str, args: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


def test_tools_are_the_public_methods_with_schemas() -> None:
    env = Calculator()
    assert sorted(env_tools(env)) == ["fail", "multiply", "slow"]
    s = tool_schema(env_tools(env)["multiply"])["function"]
    assert s["name"] == "multiply" and s["parameters"]["properties"]["a"] == {
        "type": "number",
        "description": "the first factor",
    }


def test_parsing_hermes_and_llama3_json() -> None:
    two = parse_tool_calls(_call("multiply", '{"a": 3, "b": 4}') + " then " + _call("fail", '"{\\"x\\": 1}"'))
    assert [(c.name, c.arguments, c.error) for c in two] == [
        ("multiply", {"a": 3, "b": 4}, None),
        ("fail", {"x": 1}, None),
    ]
    assert [c.id for c in two] == ["call_0", "call_1"]
    assert parse_tool_calls("The answer is 12.") == []
    assert parse_tool_calls("<tool_call>{oops}</tool_call>")[0].error.startswith("not valid JSON")
    assert parse_tool_calls('<tool_call>{"name": "multiply"')[0].error == "<tool_call> without </tool_call>"
    assert parse_tool_calls('<tool_call>["multiply"]</tool_call>')[0].error.startswith("a tool call is a JSON object")
    llama = parse_tool_calls('<|python_tag|>{"name": "multiply", "parameters": {"a": 2, "b": 5}}', "llama3_json")
    assert [(c.name, c.arguments) for c in llama] == [("multiply", {"a": 2, "b": 5})]
    assert parse_tool_calls("It is 10.", "llama3_json") == []


def test_every_failure_of_a_call_is_a_message_to_the_model() -> None:
    env = Calculator()
    env.reset(question="q")
    tools = env_tools(env)
    results = {
        kind: call_tool(tools, parse_tool_calls(text)[0], timeout_s=0.3)
        for kind, text in {
            "ok": _call("multiply", '{"a": "3", "b": 4}'),  # "3" converts to a number, as the schema says
            "malformed": "<tool_call>{</tool_call>",
            "unknown_tool": _call("divide", "{}"),
            "missing": _call("multiply", '{"a": 3}'),
            "wrong_type": _call("multiply", '{"a": "three", "b": 4}'),
            "exception": _call("fail", '{"x": 1}'),
            "timeout": _call("slow", "{}"),
        }.items()
    }
    assert results["ok"].content == "12.0" and results["ok"].error is None
    assert {k: r.error for k, r in results.items() if k != "ok"} == {
        "malformed": "malformed", "unknown_tool": "unknown_tool", "missing": "bad_arguments",
        "wrong_type": "bad_arguments", "exception": "exception", "timeout": "timeout",
    }  # fmt: skip
    assert "unknown tool 'divide' (tools: fail, multiply, slow)" in results["unknown_tool"].content
    assert results["exception"].content == "Error: RuntimeError: boom"
    assert all(r.content.startswith("Error: ") for k, r in results.items() if k != "ok")


def test_a_trl_style_environment_runs_unchanged() -> None:
    env = Calculator()
    row = {"question": "What is 3 times 4?", "hint": "Use the tools."}
    c = Conversation.start(env, row, [{"role": "user", "content": row["question"]}], EnvLimits(max_turns=3))
    assert c.messages[0]["content"] == "What is 3 times 4?\n\nUse the tools."  # reset's text joins the prompt
    obs = c.step(_call("multiply", '{"a": 3, "b": 4}') + _call("nope", "{}"))
    assert obs == [
        {"role": "tool", "name": "multiply", "content": "12.0"},
        {"role": "tool", "name": "nope", "content": "Error: unknown tool 'nope' (tools: fail, multiply, slow)"},
    ]
    assert c.step("The answer is 12.") is None and c.done and c.ended_by == "answer"
    assert (c.turns, c.tool_calls, c.valid_calls, dict(c.errors)) == (2, 2, 1, {"unknown_tool": 1})
    assert env.get_reward() == 1.0 and [m["role"] for m in c.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]

    short = Conversation.start(Calculator(), row, [{"role": "user", "content": "q"}], EnvLimits(max_turns=1))
    assert short.step(_call("multiply", '{"a": 1, "b": 1}')) is None and short.ended_by == "max_turns"
    capped = Conversation.start(Calculator(), row, [{"role": "user", "content": "q"}], EnvLimits(max_tool_calls=1))
    out = capped.step(_call("multiply", '{"a": 1, "b": 2}') * 2)
    assert [m["content"] for m in out] == ["2.0", "Error: tool call limit reached; answer now"]


def _tokenizer(real_model_dir: Path, template: str | None):
    from rlvr.models.load import load_tokenizer

    tok = load_tokenizer(real_model_dir)
    if template is not None:
        tok.chat_template = Path(template).read_text()
    return tok


@pytest.mark.parametrize("template", [None, str(QWEN_STYLE)], ids=["smollm2", "qwen-style-tools"])
def test_the_trained_sequence_is_what_the_engine_saw(
    real_model_dir: Path, template: str | None, scripted_sampler
) -> None:
    tok = _tokenizer(real_model_dir, template)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    answer = enc(" ans") + enc("wer")  # " answer" the way a model may sample it: two tokens, not the canonical one
    assert enc(" answer") != answer
    turn1, turn2 = enc(_call("multiply", '{"a": 3, "b": 4}')) + [end], enc("The") + answer + enc(" is 12") + [end]
    engine = scripted_sampler([turn1, turn2])
    row = {"question": "What is 3 times 4?"}
    c = Conversation.start(Calculator(), row, [{"role": "user", "content": row["question"]}], EnvLimits())
    (t,) = run_conversations(None, tok, [c], SamplingConfig(max_new_tokens=64), end_ids=[end], sampler=engine,
                             keep_engine_inputs=True)  # fmt: skip
    (a, b), (c2, d) = t.turns
    assert t.ids[a:b] == turn1 and t.ids[c2:d] == turn2  # the sampled ids, never re-encoded (" ans", "wer" stay)
    assert t.mask == [1] * len(turn1) + [0] * (c2 - b) + [1] * len(turn2) and d == len(t.ids)
    assert engine.prompts == [t.prompt_ids, t.prompt_ids + t.ids[:c2]] == t.engine_inputs
    obs = tok.decode(t.ids[b:c2])
    assert obs.startswith("\n<|im_start|>") and obs.endswith("<|im_start|>assistant\n")  # the newline after <|im_end|>
    assert "12.0" in obs and c.ended_by == "answer" and not t.truncated
    if template is not None:
        assert "<tools>" in tok.decode(t.prompt_ids) and "<tool_response>\n12.0\n</tool_response>" in obs
    # with canonical tokens, the sequence is the template's own rendering of the conversation
    plain = [{k: v for k, v in m.items() if k != "tool_calls"} for m in c.messages]
    rendered = enc(tok.apply_chat_template(plain, tools=c.schemas(), tokenize=False))
    canonical = t.prompt_ids + t.ids[:c2] + enc("The answer is 12") + [end]
    assert rendered[: len(canonical)] == canonical and tok.decode(rendered[len(canonical) :]) == "\n"


def test_a_turn_stopped_at_the_call_end_gets_the_end_of_turn_token_from_the_environment(
    real_model_dir: Path, scripted_sampler
) -> None:
    """`sampling.stop: ["</tool_call>"]` ends a turn at the call's end, before the model's `<|im_end|>`:
    the environment's tokens then start with the template's `<|im_end|>` (mask 0), and the sequence is
    still the template's own rendering of the conversation."""
    tok = _tokenizer(real_model_dir, str(QWEN_STYLE))
    end = tok.convert_tokens_to_ids("<|im_end|>")
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    turn1, turn2 = enc(_call("multiply", '{"a": 3, "b": 4}')), enc("It is 12") + [end]
    row = {"question": "What is 3 times 4?"}
    c = Conversation.start(Calculator(), row, [{"role": "user", "content": row["question"]}], EnvLimits())
    s = SamplingConfig(max_new_tokens=64, stop=["</tool_call>"])
    (t,) = run_conversations(None, tok, [c], s, end_ids=[end], sampler=scripted_sampler([turn1, turn2]))
    (a, b), (c2, d) = t.turns
    assert t.ids[a:b] == turn1 and t.ids[b] == end and t.mask[b] == 0 and t.ids[c2:d] == turn2
    assert c.ended_by == "answer" and c.tool_calls == 1 and not t.truncated
    plain = [{k: v for k, v in m.items() if k != "tool_calls"} for m in c.messages]
    rendered = enc(tok.apply_chat_template(plain, tools=c.schemas(), tokenize=False))
    assert rendered[: len(t.prompt_ids) + len(t.ids)] == t.prompt_ids + t.ids


def test_turn_limits_and_budget_end_conversations(real_model_dir: Path, scripted_sampler) -> None:
    tok = _tokenizer(real_model_dir, None)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    call = tok(_call("multiply", '{"a": 3, "b": 4}'), add_special_tokens=False)["input_ids"] + [end]
    msgs = [{"role": "user", "content": "q"}]
    cut = Conversation.start(Calculator(), {"question": "q"}, msgs, EnvLimits(max_turn_tokens=5))
    budget = Conversation.start(Calculator(), {"question": "q"}, msgs, EnvLimits(max_total_tokens=len(call) + 3))
    cut_t, budget_t = run_conversations(None, tok, [cut, budget], SamplingConfig(), end_ids=[end],
                                        sampler=scripted_sampler([call, call]))  # fmt: skip
    assert cut.ended_by == "truncated" and cut_t.truncated and cut_t.ids == call[:5] and cut_t.mask == [1] * 5
    assert budget.ended_by == "budget" and budget_t.truncated and budget_t.ids == call  # no room for the observation


def test_real_sampling_smollm2_keeps_every_sampled_token(real_model_dir: Path) -> None:
    """The fast decoder on SmolLM2, two conversations, tool results fed back: each turn's prompt is the
    sequence so far and each turn's ids are the engine's own."""
    from rlvr.models.engines import Sampler
    from rlvr.models.load import load_model

    tok, model = _tokenizer(real_model_dir, str(QWEN_STYLE)), load_model(real_model_dir)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    seen: list[tuple[list[list[int]], list[list[int]]]] = []

    class Recording(Sampler):
        def sample(self, model, tok, prompts, n, sampling, **kw):
            out = super().sample(model, tok, prompts, n, sampling, **kw)
            seen.append(([list(p) for p in prompts], [list(x) for x in out.tokens]))
            return out

    class Echo(Calculator):  # every turn gets an observation, so both turns run
        def reset(self, **row):
            super().reset(**row)

    convs = [
        Conversation.start(Echo(), {"question": q}, [{"role": "user", "content": q}], EnvLimits(max_turns=2))
        for q in ("Use multiply for 3 times 4.", "What is 6 times 7? Call the tool.")
    ]
    trajs = run_conversations(model, tok, convs, SamplingConfig(max_new_tokens=24, temperature=1.0),
                              end_ids=[end, tok.eos_token_id], sampler=Recording("fast"), seed=3)  # fmt: skip
    for k, t in enumerate(trajs):
        for j, (a, b) in enumerate(t.turns):
            prompts, outs = seen[j]
            row = [i for i in range(len(trajs)) if len(trajs[i].turns) > j].index(k)  # call j's rows: the live ones
            assert prompts[row] == t.prompt_ids + t.ids[:a]
            assert t.ids[a:b] == outs[row][: b - a]
        assert sum(t.mask) == sum(b - a for a, b in t.turns)


ENV = "import time\n\n\n" + inspect.getsource(Calculator)  # the same class, as a user's file


def test_grpo_trains_on_model_tokens_of_whole_conversations(
    real_model_dir: Path, tmp_path: Path, scripted_sampler
) -> None:
    from rlvr.config import load_config
    from rlvr.grpo.config import TrainConfig
    from rlvr.grpo.trainer import GRPOTrainer

    (tmp_path / "calc.py").write_text(ENV)
    cfg = load_config(TrainConfig, None, {
        "model": str(real_model_dir), "out": str(tmp_path / "run"), "task": "arith", "preset": "small", "n_train": 8,
        "steps": 1, "prompts_per_step": 2, "group_size": 2, "sampling": {"prompt_format": "chat", "max_new_tokens": 48},
        "eval_every": 0, "save_every": 0, "threads": 2, "lr": 1e-5, "lora": {"r": 4, "alpha": 8},
        "rewards": [{"name": "outcome"}, {"name": "env_reward", "weight": 0.5}],
        "env": {"factory": f"{tmp_path / 'calc.py'}:Calculator", "limits": {"max_turns": 2, "max_total_tokens": 200}},
    })  # fmt: skip
    tr = GRPOTrainer(cfg)
    tok = tr.tok
    end = tok.convert_tokens_to_ids("<|im_end|>")
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    gold = tr.problems[0].answer
    call, right, wrong = (
        enc(_call("multiply", '{"a": 2, "b": 3}')) + [end],
        enc(f"#### {gold}") + [end],
        enc("#### -1") + [end],
    )
    # turn 1 of the 4 conversations (2 problems x G=2), then turn 2 of the two that called the tool
    tr.sampler = scripted_sampler([call, wrong, call, right, right, wrong])
    seen = {}
    update = tr.update

    def spy(ro):
        seen["ro"] = ro
        seen["batches"] = tr._micro_batches(ro, list(range(len(ro.tokens))))
        return update(ro)

    tr._update = spy  # the update the trainer resolved at setup (grpo: `update`)
    row = tr.train_step()
    ro = seen["ro"]
    assert [len(m) for m in ro.messages] == [3, 1, 3, 1]  # assistant, tool, assistant | assistant
    assert ro.messages[0][1] == {"role": "tool", "name": "multiply", "content": "6.0"}
    assert ro.rewards["env_reward"] == [1.0, 0.0, 1.0, 0.0]
    for idx, b in seen["batches"]:
        for r, i in enumerate(idx.tolist()):
            assert b.mask[r, : len(ro.tokens[i])].tolist() == ro.loss_mask[i]  # 0 over every environment token
            assert b.mask[r, len(ro.tokens[i]) :].sum() == 0
    assert ro.loss_mask[0].count(0) > 5 and ro.loss_mask[1] == [1] * len(ro.tokens[1])
    assert row["env/tool_calls"] == 0.5 and row["env/valid_call_frac"] == 1.0 and row["env/tool_use_frac"] == 0.5
    assert row["env/env_tokens"] > 0 and torch.isfinite(torch.tensor(row["train/loss"]))
    tr.run.close()
    rows = [json.loads(x) for x in (tmp_path / "run" / "samples" / "train.jsonl").read_text().splitlines()]
    assert rows[0]["messages"][1]["content"] == "6.0" and rows[1]["messages"][0]["role"] == "assistant"


def test_env_configs_are_checked_when_read(tmp_path: Path) -> None:
    from rlvr.config import load_config
    from rlvr.grpo.config import TrainConfig

    with pytest.raises(ValueError, match="give FILE.py:CLASS or MODULE:CLASS"):
        load_config(TrainConfig, None, {"env": {"factory": "nocolon"}, "eval_every": 0})
    with pytest.raises(ValueError, match="no such file"):
        load_config(TrainConfig, None, {"env": {"factory": "missing.py:Env"}, "eval_every": 0})


def test_rlvr_eval_scores_conversations(real_model_dir: Path, tmp_path: Path) -> None:
    from rlvr.config import load_config
    from rlvr.evaluate.evaluation import EvalConfig, run_eval

    (tmp_path / "calc.py").write_text(ENV)
    cfg = load_config(EvalConfig, None, {
        "model": str(real_model_dir), "out": str(tmp_path / "ev"), "task": "arith", "preset": "small",
        "n_problems": 2, "n_samples": 2, "ks": [1, 2], "sampling": {"prompt_format": "chat", "max_new_tokens": 12},
        "env": {"factory": f"{tmp_path / 'calc.py'}:Calculator", "limits": {"max_turns": 2, "max_total_tokens": 64}},
        "threads": 2, "plots": False,
    })  # fmt: skip
    run_eval(cfg)
    result = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert result["env_tokens_per_sample"] >= 0 and result["n_samples"] == 2
    rows = [json.loads(x) for x in (tmp_path / "ev" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["messages"][0]["role"] == "assistant" for r in rows)
    assert all("<tools>" not in r["prompt"] or "multiply" in r["prompt"] for r in rows)
    assert all(r["completion"] == [m for m in r["messages"] if m["role"] == "assistant"][-1]["content"] for r in rows)
