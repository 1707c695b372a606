"""IFEval's 25 verifiable instructions, checked by rlvr: pure text functions, deterministic, nothing downloaded.

`check_instruction(response, instruction_id, kwargs, prompt) -> InstructionVerdict(strict, loose, reason)` and
`check_prompt(response, instruction_ids, kwargs_list, prompt) -> PromptVerdict` score responses;
`generate_prompts(split, n, seed)` makes training and dev prompts; `hack_probes(row)` the audit's hacks.
Rules and their reasons: docs/instructions.md.
"""

from rlvr.verify.ifeval.generate import SPLITS, base_requests, generate_prompts
from rlvr.verify.ifeval.instructions import REGISTRY, Instruction
from rlvr.verify.ifeval.probes import PROBE_KINDS, hack_probes
from rlvr.verify.ifeval.score import InstructionVerdict, PromptVerdict, check_instruction, check_prompt, loose_variants

__all__ = [
    "REGISTRY",
    "SPLITS",
    "Instruction",
    "PROBE_KINDS",
    "InstructionVerdict",
    "PromptVerdict",
    "check_instruction",
    "base_requests",
    "check_prompt",
    "generate_prompts",
    "hack_probes",
    "loose_variants",
]
