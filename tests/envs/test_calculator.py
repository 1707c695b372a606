"""The calculator environment on the embedded tiny model: its tool, its chat template, SFT
demonstrations that are token for token what a rollout holds, and the whole loop (sft with demos,
GRPO with the environment, eval with the tool-use rate) from configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import SamplingConfig
from rlvr.envs import EnvLimits, EnvRunner, EnvSpec, call_tool, env_tools, parse_tool_calls, run_conversations
from rlvr.envs.calculator import Calculator, demonstrate
from rlvr.models.tiny import build_tokenizer
from rlvr.tasks import PromptFormatter, format_prompt, format_target, load_task


def test_calc_is_exact_and_its_failures_are_messages() -> None:
    env = Calculator()
    env.reset(question="q")
    tools = env_tools(env)
    assert list(tools) == ["calc"]
    run = lambda text: call_tool(tools, parse_tool_calls(text)[0])  # noqa: E731
    assert run('<tool_call>{"name": "calc", "arguments": {"expr": "14*12"}}</tool_call>').content == "168"
    assert run('<tool_call>{"name": "calc", "arguments": {"expr": "(7+2)/4"}}</tool_call>').content == "2.25"
    bad = run('<tool_call>{"name": "calc", "arguments": {"expr": "import os"}}</tool_call>')
    assert bad.error == "exception" and "cannot evaluate" in bad.content
    assert env.calls == 3


@pytest.fixture(scope="module")
def tiny_chat():
    probs = load_task("arith", "train", n=200, preset="hard")
    texts = [format_prompt(p.question) + format_target(p) for p in probs] + demonstrate(probs[0])
    tok = build_tokenizer(texts, chat=True)
    return tok, probs


def test_tiny_chat_template_round_trips_a_conversation(tiny_chat) -> None:
    tok, probs = tiny_chat
    fmt = PromptFormatter.create(tok, "auto")
    assert fmt.fmt == "chat" and fmt.end_id == tok.eos_token_id  # </s> ends a turn
    turns = demonstrate(probs[0])
    assert len(turns) == probs[0].n_steps + 1 and turns[-1] == f"#### {probs[0].answer}"
    ids = tok(turns[0], add_special_tokens=False)["input_ids"]
    assert tok.convert_ids_to_tokens(ids)[0] == "<tool_call>" and tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True) == turns[0]  # the markers are not special: a turn keeps them


def test_a_demonstration_is_what_a_rollout_holds_token_for_token(tiny_chat, scripted_sampler) -> None:
    """SFT trains on `EnvRunner.demonstrate`; an engine that samples the same turns gets the same
    sequence, the same mask and, at each turn, the sequence so far as its prompt. The observation
    starts with the newline the template writes after `</s>` (TRL #5317's case)."""
    tok, probs = tiny_chat
    fmt = PromptFormatter.create(tok, "chat")
    p = next(p for p in probs if p.n_steps == 4)
    spec = EnvSpec(factory="rlvr.envs.calculator:Calculator", limits=EnvLimits(max_turns=6, max_total_tokens=256))
    runner = EnvRunner.build(spec, tok, fmt, None)
    with pytest.raises(ValueError, match="do not fit env limits .max_turns"):
        EnvRunner.build(EnvSpec(factory=spec.factory), tok, fmt, None).demonstrate(tok, p, demonstrate(p), fmt.end_id)
    demo = runner.demonstrate(tok, p, demonstrate(p), fmt.end_id)
    assert demo.conversation is not None and demo.conversation.tool_calls == p.n_steps
    turns = [demo.ids[a:b] for a, b in demo.turns]
    engine = scripted_sampler(turns)
    conv = runner.start(p)
    (t,) = run_conversations(None, tok, [conv], SamplingConfig(max_new_tokens=64), end_ids=[fmt.end_id],
                             sampler=engine, renderer=runner.renderer, keep_engine_inputs=True)  # fmt: skip
    assert t.prompt_ids == demo.prompt_ids and t.ids == demo.ids and t.mask == demo.mask
    assert t.engine_inputs == [t.prompt_ids + t.ids[:a] for a, _ in t.turns]
    (b, _), (c, _) = t.turns[1], t.turns[0]
    obs = tok.decode(t.ids[t.turns[0][1] : b])
    assert obs == f"\n<tool_response>{p.steps[0].result}</tool_response>\nA:" and c == 0
    assert conv.answer == f"#### {p.answer}" and conv.ended_by == "answer" and conv.valid_calls == p.n_steps
    # with canonical tokens the sequence is the template's own rendering of the conversation
    rendered = tok.apply_chat_template(conv.messages, tokenize=False)
    assert tok(rendered, add_special_tokens=False)["input_ids"] == t.prompt_ids + t.ids + tok("\n")["input_ids"]


def test_hf_and_fast_engines_hold_the_same_conversations(calculator_model) -> None:
    """Real sampling on the tiny model through both local engines: every turn's engine prompt is the
    sequence so far, and the two engines (the same random stream) hold the same conversations."""
    from rlvr.models.engines import Sampler
    from rlvr.models.load import load_model, load_tokenizer

    model_dir = calculator_model(32)
    model, tok = load_model(model_dir), load_tokenizer(model_dir)
    fmt = PromptFormatter.create(tok, "chat")
    spec = EnvSpec(factory="rlvr.envs.calculator:Calculator", limits=EnvLimits(max_turns=3, max_total_tokens=128))
    runner = EnvRunner.build(spec, tok, fmt, None)
    probs = load_task("arith", "test", n=6, preset="small")

    class Recording(Sampler):
        seen: list[list[list[int]]]

        def sample(self, model, tok, prompts, n, sampling, **kw):
            self.seen.append([list(p) for p in prompts])
            return super().sample(model, tok, prompts, n, sampling, **kw)

    held = {}
    for engine in ("hf", "fast"):
        sampler = Recording(engine)
        sampler.seen = seen = []
        convs, trajs = runner.run(model, tok, probs, 4, SamplingConfig(max_new_tokens=40), sampler=sampler)
        for k, t in enumerate(trajs):
            for j, (a, _) in enumerate(t.turns):
                live = [i for i in range(len(trajs)) if len(trajs[i].turns) > j]
                assert seen[j][live.index(k)] == t.prompt_ids + t.ids[:a]
            assert sum(t.mask) == sum(b - a for a, b in t.turns)
        held[engine] = ([c.messages for c in convs], [t.ids for t in trajs], [t.mask for t in trajs])
    # the same conversations, but for a near-tie the decoders' float noise may break differently
    # (measured: 1 token of about 2,000 differed, at step 68 of one conversation)
    same = [a == b for a, b in zip(zip(*held["hf"], strict=True), zip(*held["fast"], strict=True), strict=True)]
    assert sum(same) >= 0.9 * len(same)
    assert max(sum(m["role"] == "assistant" for m in c) for c in held["fast"][0]) >= 2  # tool results were read


def test_sft_demos_then_grpo_and_eval_with_the_calculator(tmp_path: Path) -> None:
    """`rlvr sft` with demos builds a chat tiny model; `rlvr train` with `env:` and `rlvr eval` with it
    run from YAML, the eval reporting the tool-use rate with a CI."""
    from typer.testing import CliRunner

    from rlvr.cli import app

    cli = CliRunner()
    sft = tmp_path / "sft.yaml"
    sft.write_text(
        "model: tiny\ntiny: {hidden_size: 32, num_layers: 1, num_heads: 2, intermediate_size: 64}\n"
        "task: arith\npreset: hard\nn_train: 64\nsteps: 3\nbatch_size: 8\nlog_every: 1\n"
        "sampling: {prompt_format: chat}\n"
        'demos: {env: {factory: "rlvr.envs.calculator:Calculator", limits: {max_turns: 6, max_total_tokens: 256}}, '
        "share: 0.5}\n"
        f"out: {tmp_path / 'sft'}\n"
    )
    r = cli.invoke(app, ["sft", "--config", str(sft)])
    assert r.exit_code == 0, r.output
    env = '{factory: "rlvr.envs.calculator:Calculator", limits: {max_turns: 6, max_total_tokens: 96}}'
    train = tmp_path / "train.yaml"
    train.write_text(
        f"model: {tmp_path / 'sft' / 'model'}\ntask: arith\npreset: hard\nsteps: 1\nprompts_per_step: 2\n"
        f"group_size: 2\nsampling: {{max_new_tokens: 32}}\nenv: {env}\neval_every: 1\neval_n: 2\n"
        f"eval_samples: 2\nout: {tmp_path / 'grpo'}\n"
    )
    r = cli.invoke(app, ["train", "--config", str(train)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert any("env/tool_use_frac" in row for row in rows)
    assert any(0 <= row.get("eval/dev/tool_use", -1) <= 1 for row in rows)  # the dev evaluation holds conversations
    ev = tmp_path / "eval.yaml"
    ev.write_text(
        f"model: {tmp_path / 'grpo' / 'model'}\ntask: arith\npreset: hard\nsplit: test\nn_problems: 3\n"
        f"n_samples: 2\nks: [1, 2]\nsampling: {{max_new_tokens: 32}}\nenv: {env}\nout: {tmp_path / 'eval'}\n"
    )
    r = cli.invoke(app, ["eval", "--config", str(ev)])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "eval" / "eval.json").read_text())
    use = res["metrics"]["tool_use"]
    assert 0 <= use["value"] <= 1 and len(use["ci"]) == 2 and res["prompt_format"] == "chat"
    # the review slice and page, and the audit's structure statistics, read the conversations
    from starlette.testclient import TestClient

    from rlvr.audit.drift import structure_stats
    from rlvr.review.app import create_app
    from rlvr.review.export import export_slice
    from rlvr.runs import read_samples

    review = export_slice(tmp_path / "eval", n=4)
    line = json.loads((review / "slice.jsonl").read_text().splitlines()[0])
    assert line["messages"][0]["role"] == "assistant"
    with TestClient(create_app(review)) as c:
        view = c.get("/api/items/0").json()["completion_view"]
    assert "assistant: " in "".join(seg["text"] for seg in view["segments"])
    samples = read_samples(tmp_path / "eval" / "samples.jsonl")
    assert samples[0].text and samples[0].text.startswith("assistant: ")
    assert structure_stats(samples).incorrect is not None
    bad = tmp_path / "bad.yaml"
    bad.write_text(sft.read_text().replace("prompt_format: chat", "prompt_format: plain"))
    r = cli.invoke(app, ["sft", "--config", str(bad), "--out", str(tmp_path / "bad")])
    assert r.exit_code == 2 and "chat" in r.output and not (tmp_path / "bad").exists()


def test_demo_scripts_words_reach_the_vocabulary_and_a_failing_script_is_one_line(tmp_path: Path) -> None:
    """Every word the demonstrations write is in the tiny vocabulary (not only the first problem's);
    a script that raises stops `rlvr sft` with one line naming it and the problem, before the folder."""
    from typer.testing import CliRunner

    from rlvr.cli import app
    from rlvr.models.load import load_tokenizer

    script = tmp_path / "script.py"
    script.write_text(
        'def answer(p):\n    return [f\'{p.id.split("-")[-1] == "3" and "zebra" or "so"} #### {p.answer}\']\n'
        "def broken(p):\n    raise KeyError('steps')\n"
    )
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(
        "tiny: {hidden_size: 16, num_layers: 1, num_heads: 2, intermediate_size: 32}\npreset: small\nn_train: 8\n"
        "steps: 1\nbatch_size: 4\nthreads: 1\nsampling: {prompt_format: chat}\n"
        f"demos: {{env: {{factory: 'rlvr.envs.calculator:Calculator'}}, script: '{script}:answer', share: 1.0}}\n"
    )
    cli = CliRunner()
    r = cli.invoke(app, ["sft", "--config", str(cfg), "--out", str(tmp_path / "ok")])
    assert r.exit_code == 0, r.output
    tok = load_tokenizer(tmp_path / "ok" / "model")
    assert tok.unk_token_id not in tok(" zebra", add_special_tokens=False)["input_ids"]  # problem 3's word only
    cfg.write_text(cfg.read_text().replace(":answer", ":broken"))
    r = cli.invoke(app, ["sft", "--config", str(cfg), "--out", str(tmp_path / "bad")])
    assert r.exit_code == 2 and "broken on arith-small-train-0-0: KeyError" in r.output
    assert not (tmp_path / "bad").exists()
    # the first problem's turns feed the vocabulary even when it is not drawn for a demonstration
    cfg.write_text(cfg.read_text().replace("share: 1.0", "share: 0.01"))
    r = cli.invoke(app, ["sft", "--config", str(cfg), "--out", str(tmp_path / "bad")])
    assert r.exit_code == 2 and "broken on arith-small-train-0-0: KeyError" in r.output
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow  # about a minute: the example configs as a new user runs them, with few steps
def test_the_calculator_examples_run_from_a_fresh_clone(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rlvr.cli import app

    root, cli = Path(__file__).resolve().parents[2], CliRunner()
    ex = root / "examples"
    for args in (
        ["sft", "--config", str(ex / "calculator-sft.yaml"), "--steps", "2", "--out", str(tmp_path / "sft")],
        ["train", "--config", str(ex / "calculator.yaml"), "--model", str(tmp_path / "sft" / "model"), "--steps", "1",
         "--out", str(tmp_path / "grpo")],
        ["eval", "--config", str(ex / "calculator-eval.yaml"), "--model", str(tmp_path / "grpo" / "model"),
         "--problems", "4", "--samples", "2", "--ks", "1,2", "--out", str(tmp_path / "eval")],
        ["eval", "--config", str(ex / "calculator-notool-eval.yaml"), "--model", str(tmp_path / "grpo" / "model"),
         "--problems", "4", "--samples", "2", "--ks", "1,2", "--out", str(tmp_path / "eval-notool")],
    ):  # fmt: skip
        r = cli.invoke(app, args)
        assert r.exit_code == 0, (args, r.output)
    assert "tool_use" in json.loads((tmp_path / "eval" / "eval.json").read_text())["metrics"]
    assert "tool_use" not in json.loads((tmp_path / "eval-notool" / "eval.json").read_text())["metrics"]
