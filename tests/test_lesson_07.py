"""The encoder-block lesson (chapter 07) shows the numbers it claims, and no code that answers its exercise.

Exact quantities (parameter counts, the position-wise feed-forward, the list-repetition trap, the dropout slip)
are checked against their definitions; agreement with torch.nn.TransformerEncoderLayer and TransformerEncoder
against a tolerance. The measurements through the stacks of layers (the 12-layer table, the 6-to-48-layer
profiles and the 48-layer spread over seeds) are recomputed here with torch's own modules (nn.Linear,
nn.LayerNorm, F.scaled_dot_product_attention), drawn in the order the page's `init_layer` claims to follow, and
the prose, the summary included, is checked to quote those numbers and to say what they show.

The LayerNorm section's numbers (the worked example, BatchNorm against LayerNorm, the table of mistakes) are
recomputed in numpy from the same seeded draws: BatchNorm from its definition (per feature over the batch and the
positions; running averages with momentum 0.1), the mistakes from the formula.

The lesson's code cells are also read as Python (no build needed): no cell may define the exercise's
`LayerNorm`, `FeedForward`, `EncoderLayer` or `Encoder`, a module with the exercise's attributes (a `weight` and a
`bias` included), or a function or lambda that computes a mean and a variance (a reusable LayerNorm), under any
name (the rule of docs/maintainers.md, "Changing an exercise": a lesson shows ideas in code that needs real work
to become the exercise).

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_07.py -q
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lesson_page import number

LESSON = "chapters/07_encoder_block.html"
SOURCE = Path(__file__).resolve().parent.parent / "chapters" / "07_encoder_block.md"
D_MODEL, D_FF = 512, 2048  # the paper's sizes, used for the parameter counts
S_MODEL, S_HEADS, S_FF = 64, 4, 256  # the sizes of the page's stacks
WIRINGS = ("neither", "residual only", "LayerNorm only", "post-LN", "pre-LN")


# --- the lesson's code gives no answer away ----------------------------------------------------------------


def code_cells(source: str) -> list[tuple[int, ast.Module]]:
    """(line, parsed code) of every code cell of a MyST page, its options and IPython magics removed."""
    cells = []
    for match in re.finditer(r"^```\{code-cell\}[^\n]*\n(.*?)^```", source, re.MULTILINE | re.DOTALL):
        body = re.sub(r"\A---\n.*?\n---\n", "", match.group(1), flags=re.DOTALL)  # a YAML options block
        lines = [line for line in body.splitlines() if not line.startswith((":", "%", "!"))]
        cells.append((source.count("\n", 0, match.start()) + 1, ast.parse("\n".join(lines))))
    return cells


def dotted(node: ast.AST) -> str:
    """'nn.Module' for the expression nn.Module, '' for what is not a (dotted) name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def self_attributes(cls: ast.ClassDef) -> set[str]:
    """The attributes a class sets on self: self.x = ..., self.a, self.b = ..., setattr(self, "x", ...),
    self.add_module("x", ...), self.register_module("x", ...)."""
    found = set()
    for node in ast.walk(cls):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        for target in targets:
            for element in ast.walk(target):
                if isinstance(element, ast.Attribute) and dotted(element.value) == "self":
                    found.add(element.attr)
        if isinstance(node, ast.Call):
            function, args = dotted(node.func), node.args
            named = (
                args[1]
                if function == "setattr" and len(args) > 1
                else args[0]
                if function in ("self.add_module", "self.register_module") and args
                else None
            )
            if isinstance(named, ast.Constant) and isinstance(named.value, str):
                found.add(named.value)
    return found


def normalises(node: ast.AST) -> bool:
    """Whether a function, class or lambda computes a mean and a variance (or a standard deviation): the
    statistics of a LayerNorm, reusable under any name."""
    called = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            called.add(dotted(inner.func).split(".")[-1] or getattr(inner.func, "attr", ""))
    return bool(called & {"var_mean", "std_mean"}) or ("mean" in called and bool(called & {"var", "std"}))


def answers_in(source: str) -> list[str]:
    """What in a page's code cells could be pasted into exercise 07 as an answer."""
    asked = {"LayerNorm", "FeedForward", "EncoderLayer", "Encoder"}
    modules: set[str] = set()  # classes of the page that are torch modules, directly or through another
    problems = []
    for line, tree in code_cells(source):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in asked:
                problems.append(f"cell at line {line}: defines {node.name}, a name the exercise asks for")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and normalises(node):
                name = getattr(node, "name", "a lambda")
                problems.append(f"cell at line {line}: {name} computes a mean and a variance, a reusable LayerNorm")
            if isinstance(node, ast.Assign):
                names = [t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)]
                problems += [
                    f"cell at line {line}: binds {name}, a name the exercise asks for"
                    for name in names
                    if name in asked
                ]
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [dotted(base) for base in node.bases]
            if any(b.split(".")[-1] == "Module" or b.startswith(("nn.", "torch.nn.")) or b in modules for b in bases):
                modules.add(node.name)
                attributes = self_attributes(node)
                for pair in (("linear1", "linear2"), ("norm1", "self_attn"), ("weight", "bias")):
                    if set(pair) <= attributes:
                        problems.append(f"cell at line {line}: module {node.name} has the exercise's attributes {pair}")
                if any(b.split(".")[-1].startswith("Transformer") for b in bases):
                    problems.append(
                        f"cell at line {line}: {node.name} subclasses {bases}, which has the exercise's attributes"
                    )
    return problems


def test_no_code_cell_defines_an_answer():
    source = SOURCE.read_text(encoding="utf8")
    assert len(code_cells(source)) >= 10, f"expected the lesson's code cells in {SOURCE}"
    problems = answers_in(source)
    assert not problems, "the lesson hands out code that answers exercise 07:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "code, caught",
    [
        (
            "class PositionWise(nn.Module):\n    def __init__(self, a, b):\n        super().__init__()\n"
            "        self.linear1, self.linear2 = nn.Linear(a, b), nn.Linear(b, a)\n",
            "PositionWise",
        ),
        (
            "---\nmystnb:\n  image:\n    alt: x\n---\nclass Base(nn.Module):\n    pass\n\n\nclass Wired(Base):\n"
            "    def __init__(self):\n        super().__init__()\n        self.self_attn = None\n"
            "        setattr(self, 'norm1', None)\n",
            "Wired",
        ),
        ("%matplotlib inline\ndef Encoder(x):\n    return x\n", "Encoder"),
        ("EncoderLayer = lambda x: x\n", "EncoderLayer"),
        ("class Mine(torch.nn.TransformerEncoderLayer):\n    pass\n", "Mine"),
        (  # what the lesson defined before LayerNorm became an exercise
            "def layer_norm(x, gamma, beta, eps=1e-5):\n    mu = x.mean(dim=-1, keepdim=True)\n"
            "    var = x.var(dim=-1, correction=0, keepdim=True)\n"
            "    return gamma * (x - mu) / torch.sqrt(var + eps) + beta\n",
            "layer_norm",
        ),
        (
            "class Norm(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
            "        self.weight = nn.Parameter(torch.ones(d))\n        self.bias = nn.Parameter(torch.zeros(d))\n",
            "Norm",
        ),
        ("def stats(t):\n    return torch.var_mean(t, dim=-1, correction=0)\n", "stats"),
        ("norm = lambda t: (t - t.mean(-1, keepdim=True)) / t.std(-1, keepdim=True)\n", "a lambda"),
        ("LayerNorm = nn.LayerNorm\n", "LayerNorm"),
    ],
)
def test_the_answer_check_catches(code, caught):
    """The check above finds what the lesson used to define, and the forms a renamed copy would take."""
    problems = answers_in(f"# A page\n\n```{{code-cell}} ipython3\n{code}```\n")
    assert any(caught in problem for problem in problems), problems


# --- the page's numbers --------------------------------------------------------------------------------------


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


# --- LayerNorm: the worked example, BatchNorm, the mistakes (recomputed in numpy, float64) ---------------------

EXAMPLE = np.array(
    [[[1, 2, 3, 6], [0, 0, 4, 4], [2, 2, 2, 2]], [[3, -1, 0, 2], [-1, 0, 1, 0], [5, 1, 5, 1]]], dtype=np.float64
)
GAMMA, BETA = np.array([1.0, 2.0, 0.5, 1.0]), np.array([0.0, 0.0, 1.0, -1.0])
EPS = 1e-5


def floats(found: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+\.\d*", found)]


def test_layernorm_example(text):
    """The step-by-step example: one mean and one (biased) variance per position, then scale and shift."""
    mu = EXAMPLE.mean(axis=-1)
    sigma2 = ((EXAMPLE - mu[..., None]) ** 2).sum(axis=-1) / 4
    x_hat = (EXAMPLE - mu[..., None]) / np.sqrt(sigma2[..., None] + EPS)
    y = GAMMA * x_hat + BETA
    shown = re.search(r"mu \(2, 3, 1\) \[([^\]]+)\] sigma2 \(2, 3, 1\) \[([^\]]+)\]", text)
    assert shown, "the example prints the means and variances, shape (2, 3, 1)"
    assert floats(shown.group(1)) == pytest.approx(mu.ravel().tolist(), abs=1e-6)
    assert floats(shown.group(2)) == pytest.approx(sigma2.ravel().tolist(), abs=1e-6)
    for pos in (0, 2):
        found = re.search(rf"position \(0, {pos}\): x_hat tensor\(\[([^\]]+)\]\) y tensor\(\[([^\]]+)\]\)", text)
        assert found, f"the example prints position (0, {pos})"
        assert floats(found.group(1)) == pytest.approx(x_hat[0, pos].tolist(), abs=6e-5)
        assert floats(found.group(2)) == pytest.approx(y[0, pos].tolist(), abs=6e-5)
    assert y[0, 2].tolist() == BETA.tolist(), "a position whose features are all equal comes out as the bias"
    (sample,) = number(text, r"sigma\^2 = \(4 \+ 1 \+ 0 \+ 9\) / 4 = 3\.5\S* \(dividing by 3 would give (\S+)\)")
    assert sample == pytest.approx(14 / 3, abs=6e-4)
    assert "the output is the bias itself" in text
    (gap,) = number(
        text, r"`?nn.LayerNorm\(4\)`? given the same weight and bias computes the same 24 numbers to within (\S+)\."
    )
    assert gap < 1e-6


def seeded_batches() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The page's batch (4, 6, 8) drawn from seed 7, the batch with sequences 1-3 replaced, the padded batch."""
    draws = torch.Generator().manual_seed(7)
    batch = torch.randn(4, 6, 8, generator=draws).double().numpy()
    other = batch.copy()
    other[1:] = (3 * torch.randn(3, 6, 8, generator=draws) + 1).double().numpy()
    padded = np.concatenate([batch, np.zeros((4, 4, 8))], axis=1)
    return batch, other, padded


def batch_norm_train(t: np.ndarray) -> np.ndarray:
    """Per feature, over the batch and the positions, biased variance (what BatchNorm normalises with)."""
    mean, var = t.mean(axis=(0, 1)), t.var(axis=(0, 1))
    return (t - mean) / np.sqrt(var + EPS)


def layer_norm(t: np.ndarray) -> np.ndarray:
    mean, var = t.mean(axis=-1, keepdims=True), t.var(axis=-1, keepdims=True)
    return (t - mean) / np.sqrt(var + EPS)


def test_batchnorm_against_layernorm(text):
    batch, other, padded = seeded_batches()
    others = np.abs(batch_norm_train(batch)[0] - batch_norm_train(other)[0]).max()
    padding = np.abs(batch_norm_train(batch) - batch_norm_train(padded)[:, :6]).max()
    # eval() after one training step: running mean 0.9 * 0 + 0.1 * mean, running variance 0.9 * 1 + 0.1 * the
    # unbiased variance (BatchNorm's documented update, momentum 0.1)
    n = batch.shape[0] * batch.shape[1]
    running_mean = 0.1 * batch.mean(axis=(0, 1))
    running_var = 0.9 + 0.1 * batch.var(axis=(0, 1)) * n / (n - 1)
    evaluated = (batch - running_mean) / np.sqrt(running_var + EPS)
    train_eval = np.abs(batch_norm_train(batch) - evaluated).max()
    assert np.abs(layer_norm(batch)[0] - layer_norm(other)[0]).max() == 0
    assert np.abs(layer_norm(batch) - layer_norm(padded)[:, :6]).max() == 0
    bn, ln = number(text, r"sequence 0 moves by up to (\S+) under BatchNorm, and by (\S+) under LayerNorm")
    assert bn == pytest.approx(others, abs=6e-4) and bn > 0.5 and ln == 0
    bn, ln = number(text, r"the real positions move by up to (\S+) under BatchNorm, .*? and by (\S+) under LayerNorm")
    assert bn == pytest.approx(padding, abs=6e-4) and bn > 0.1 and ln == 0
    bn, ln = number(
        text, r"eval differs from train by up to (\S+)\. LayerNorm has no running statistics and no modes: (\S+)"
    )
    assert bn == pytest.approx(train_eval, abs=6e-4) and bn > 0.1 and ln == 0
    with pytest.raises(ValueError) as refused:
        nn.BatchNorm1d(8)(torch.randn(1, 8, 1))
    assert f"refuses it: “{refused.value}”" in text or f'refuses it: "{refused.value}"' in text
    (summary,) = number(text, r"depends on the other sequences of its batch \(up to (\S+) here\)")
    assert summary == pytest.approx(others, abs=6e-4)


MISTAKES = {  # a row of the page's table (a regular expression): the mistake, from the features t and t centred
    r"variance divided by d_model - 1 \(torch.var.s default\)": lambda t, c: (
        c / np.sqrt(t.var(-1, ddof=1, keepdims=True) + EPS)
    ),
    "ε outside the square root": lambda t, c: c / (t.std(-1, keepdims=True) + EPS),
    "over the positions of each sequence \\(dim=1\\)": lambda t, c: (
        (t - t.mean(1, keepdims=True)) / np.sqrt(t.var(1, keepdims=True) + EPS)
    ),
    "over the batch and the positions, per feature \\(BatchNorm.s axes\\)": lambda t, c: batch_norm_train(t),
}


def test_mistake_table(text):
    features = torch.randn(4, 10, 64, generator=torch.Generator().manual_seed(64), dtype=torch.float64).numpy()
    measured = {}
    for pattern, attempt in MISTAKES.items():
        for spread in (1.0, 0.001):
            t = spread * features
            centred = t - t.mean(-1, keepdims=True)
            measured[(pattern, spread)] = np.abs(attempt(t, centred) - layer_norm(t)).max()
        shown = number(text, pattern + r" (\S+) (\S+)")
        assert shown == pytest.approx([measured[(pattern, 1.0)], measured[(pattern, 0.001)]], rel=0.005), pattern
    unbiased, eps_out, positions, per_feature = (measured[(p, 1.0)] for p in MISTAKES)
    eps_small = measured[(list(MISTAKES)[1], 0.001)]
    assert unbiased == pytest.approx((1 - math.sqrt(63 / 64)) * np.abs(layer_norm(features)).max(), rel=1e-3)
    assert eps_out < 1e-4 < 1 < eps_small, "ε outside the root: invisible at spread 1, large at 0.001"
    # Issue 29, item 9: the factor is sqrt(63/64); the table's 0.0259 is the largest difference, which the page says
    factor, quoted, largest = number(
        text,
        r"The unbiased variance scales every output by .{0,40}?, (\S+) at .*? the largest difference in the table, "
        r"(\S+), is that share of the largest output, (\S+)\.",
    )
    assert factor == round(math.sqrt(63 / 64), 4) and quoted == pytest.approx(unbiased, rel=0.005)
    assert largest == round(float(np.abs(layer_norm(features)).max()), 2)
    assert quoted == pytest.approx((1 - factor) * largest, rel=0.01)
    quoted = number(text, r"invisible on features of spread 1 \((\S+), below what a float32 .*? \((\S+)\): a test")
    assert quoted == pytest.approx([eps_out, eps_small], rel=0.01)
    quoted = number(text, r"The wrong axis is wrong everywhere \((\S+) over the positions, (\S+) over the batch\)")
    assert quoted == pytest.approx([positions, per_feature], rel=0.005) and min(quoted) > 0.5


def test_feed_forward_is_position_wise(text):
    own, others = number(
        text, r"changes the output at position 3 by up to (\S+), and the outputs at the other positions by (\S+)\."
    )
    assert own > 0.05 and others == 0.0


def test_parameter_counts(text):
    ff, attn, norms, share = number(
        text,
        r"the feed-forward network holds (\S+) parameters, the attention (\S+) .*? and the two LayerNorms (\S+): "
        r"the part that never looks at another position is (\S+) %",
    )
    assert ff == D_MODEL * D_FF + D_FF + D_FF * D_MODEL + D_MODEL == 2_099_712
    assert attn == 4 * D_MODEL * D_MODEL + 4 * D_MODEL == 1_050_624
    assert norms == 2 * 2 * D_MODEL
    assert share == pytest.approx(100 * ff / (ff + attn + norms), abs=0.05) and share > 66
    total, torchs = number(
        text,
        r"In all, the layer holds (\S+) parameters, and `?torch.nn.TransformerEncoderLayer\(512, 8, 2048\)`? holds "
        r"(\S+)\.",
    )
    assert total == torchs == ff + attn + norms


def test_agrees_with_torch(text):
    (gap,) = number(text, r"both wirings agree with torch.s layer to within (\S+) at every real position")
    assert gap < 1e-10
    (gap,) = number(
        text, r"agrees with torch.nn.TransformerEncoder to within (\S+) at every real position, in both orders"
    )
    assert gap < 1e-10


def test_repeated_list_trap(text):
    repeated, one = number(
        text, r"nn.ModuleList\(\[layer\] \* 6\)`? holds (\S+) parameters, exactly the (\S+) of one layer"
    )
    per_layer = (
        (3 * S_MODEL * S_MODEL + 3 * S_MODEL)
        + (S_MODEL * S_MODEL + S_MODEL)
        + (S_MODEL * S_FF + S_FF)
        + (S_FF * S_MODEL + S_MODEL)
        + 2 * 2 * S_MODEL
    )
    assert (
        repeated
        == one
        == per_layer
        == sum(t.numel() for t in nn.TransformerEncoderLayer(S_MODEL, S_HEADS, S_FF).parameters())
    )
    (dicts,) = number(text, r"The six entries of `?\[init_layer\(64, 256\)\] \* 6`? are (\S+) dict\.")
    assert dicts == 1
    copied, equal = number(
        text,
        r"deep-copying the layer it is given: (\S+) parameters, six independent sets, but all (\S+) start from the "
        r"same values",
    )
    assert copied == 6 * per_layer and equal == 6


def test_dropout_places(text):
    assert "(and the paper's model) it sits in four places" not in text.replace("’", "'")
    quote = (
        "We apply dropout [33] to the output of each sub-layer, before it is added to the sub-layer input and "
        "normalized. In addition, we apply dropout to the sums of the embeddings and the positional encodings in "
        "both the encoder and decoder stacks."
    )
    assert quote in text, "the lesson quotes the paper's section 5.4 exactly"
    assert re.search(r"Two more come from code, not from the paper: tensor2tensor", text)
    for where in ("attention weights", "attention output", "hidden units", "feed-forward output"):
        assert re.search(re.escape(where) + r" \(2, ", text), f"the spy's output lists the {where}"
    (sites,) = number(text, r"That is (\S+) dropouts per layer")
    assert sites == 4
    zeroed, kept = number(text, r"It zeroed (\S+) % of the ones and scaled the others to (\S+) ")
    assert abs(zeroed - 10) < 4 * math.sqrt(10_000 * 0.1 * 0.9) / 100  # binomial(10 000, 0.1), in percent
    assert kept == pytest.approx(1 / 0.9, abs=5e-4)


# --- the stacks, recomputed with torch's modules -------------------------------------------------------------


class Block(nn.Module):
    """One encoder layer of the page's study, built from torch's modules in the order init_layer draws:
    W_q, W_k, W_v, W_o, then W_1 and W_2, each nn.Linear's weight then bias. No dropout, no mask."""

    def __init__(self, wiring):
        super().__init__()
        self.projections = nn.ModuleList(nn.Linear(S_MODEL, S_MODEL) for _ in range(4))
        self.widen, self.narrow = nn.Linear(S_MODEL, S_FF), nn.Linear(S_FF, S_MODEL)
        self.norms = nn.ModuleList(nn.LayerNorm(S_MODEL) for _ in range(2))
        self.wiring = wiring

    def attend(self, x):
        q, k, v = (p(x).view(*x.shape[:2], S_HEADS, -1).transpose(1, 2) for p in self.projections[:3])
        heads = F.scaled_dot_product_attention(q, k, v)
        return self.projections[3](heads.transpose(1, 2).reshape(x.shape))

    def wire(self, x, norm, f):
        return {
            "neither": lambda: f(x),
            "residual only": lambda: x + f(x),
            "LayerNorm only": lambda: norm(f(x)),
            "post-LN": lambda: norm(x + f(x)),
            "pre-LN": lambda: x + f(norm(x)),
        }[self.wiring]()

    def forward(self, x):
        x = self.wire(x, self.norms[0], self.attend)
        return self.wire(x, self.norms[1], lambda t: self.narrow(torch.relu(self.widen(t))))


def recompute(wiring: str, depth: int, seed: int = 0) -> tuple[list[float], list[float]]:
    """(rms after each layer, gradient norm of each layer's parameters), as the page defines them."""
    torch.manual_seed(seed)
    blocks = [Block(wiring) for _ in range(depth)]
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(8, 16, S_MODEL, generator=gen)
    target = torch.randn(8, 16, S_MODEL, generator=gen)
    scales = []
    for block in blocks:
        x = block(x)
        scales.append(x.detach().pow(2).mean().sqrt().item())
    F.mse_loss(F.layer_norm(x, (S_MODEL,)), target).backward()
    grads = [
        math.sqrt(sum(p.grad.pow(2).sum().item() for p in block.parameters() if p.grad is not None)) for block in blocks
    ]
    return scales, grads


@pytest.fixture(scope="module")
def one_thread():
    """The stacks are small: one thread is much faster than two competing with the rest of the suite."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def stacks(one_thread) -> dict[str, tuple[list[float], list[float]]]:
    return {wiring: recompute(wiring, 12) for wiring in WIRINGS}


@pytest.fixture(scope="module")
def profiles(one_thread) -> dict[tuple[str, int, int], list[float]]:
    """{(wiring, depth, seed): each layer's gradient norm / the last layer's}:
    seed 0 at every depth, seeds 0-3 at 48."""
    found = {}
    for wiring in ("post-LN", "pre-LN", "LayerNorm only"):
        for depth, seeds in ((6, [0]), (12, [0]), (24, [0]), (48, [0, 1, 2, 3])):
            for seed in seeds:
                grads = recompute(wiring, depth, seed)[1]
                found[(wiring, depth, seed)] = [g / grads[-1] for g in grads]
    return found


def stack_row(text: str, wiring: str) -> list[float]:
    """One row of the 12-layer table: rms after layers 1 and 12, grad norms of layers 1 and 12, their ratio."""
    value = r" ([0-9][0-9.e+-]*)"
    return number(text, re.escape(wiring) + value * 5 + r" (?=residual only|LayerNorm only|post-LN|pre-LN|What)")


def depth_rows(text: str) -> dict[str, list[float]]:
    """The depth table's first / last ratios at 6, 12, 24 and 48 layers, per wiring."""
    values = number(
        text,
        r"LayerNorm only: first / last 6 (\S+) (\S+) (\S+) 12 (\S+) (\S+) (\S+) 24 (\S+) (\S+) (\S+) "
        r"48 (\S+) (\S+) (\S+)",
    )
    return {"post-LN": values[0::3], "pre-LN": values[1::3], "LayerNorm only": values[2::3]}


def test_stack_table_is_the_measurement(text, stacks):
    for wiring, (scales, grads) in stacks.items():
        rms1, rms12, g1, g12, ratio = stack_row(text, wiring)
        shown = (rms1, rms12, g1, g12, ratio)
        measured = (scales[0], scales[-1], grads[0], grads[-1], grads[0] / grads[-1])
        assert shown == pytest.approx(measured, rel=0.01), (
            f"{wiring}: the page shows {shown}, torch's modules give {measured}"
        )


def test_stack_prose_follows_the_table(text):
    rows = {w: stack_row(text, w) for w in WIRINGS}
    plain, res, norm, post, pre = rows.values()
    # what the bullets say about each wiring, true of the table ...
    assert plain[0] < 0.2 and plain[4] < 1e-6, (
        "without residual nor norm, the scale collapses and the gradient vanishes"
    )
    assert res[1] > res[0] > 0.9 and 0.5 < res[4] < 2, "residual only: the scale grows, the gradient reaches layer 1"
    for row in (norm, post):
        assert row[0] == pytest.approx(1, abs=1e-3) and row[1] == pytest.approx(1, abs=1e-3), (
            "LayerNorm pins the scale at 1"
        )
    assert norm[4] < post[4], "LayerNorm alone loses more gradient than with the residual path"
    assert pre[1] > pre[0], "pre-LN's stream grows"
    assert 0.5 < post[4] < 2 and 0.5 < pre[4] < 2, "at 12 layers neither order starves a layer"
    # ... and quoted from it
    (quoted,) = number(
        text, r"the first layer.s gradient is (\S+) times the last layer.s\. The output no longer depends"
    )
    assert quoted == pytest.approx(plain[4], rel=0.05)
    quoted = number(
        text,
        r"LayerNorm only: the scale is pinned \((\S+) after layer 12\).*? the first layer gets (\S+) times "
        r"the last layer.s gradient, against (\S+) with the residual connections",
    )
    assert quoted == pytest.approx([norm[1], norm[4], post[4]], rel=0.01)
    (quoted,) = number(text, r"Post-LN \(both, the paper.s order\): the scale is pinned \((\S+)\)")
    assert quoted == pytest.approx(post[1], abs=1e-3)
    quoted = number(
        text,
        r"Pre-LN: .*? so its scale grows slowly, from (\S+) after layer 1 to (\S+) after layer 12, and the "
        r"first layer gets (\S+) times",
    )
    assert quoted == pytest.approx([pre[0], pre[1], pre[4]], rel=0.01)
    quoted = number(
        text,
        r"At 12 layers neither order starves a layer at initialisation: the first layer gets (\S+) "
        r"\(post-LN\) and (\S+) \(pre-LN\)",
    )
    assert quoted == pytest.approx([post[4], pre[4]], rel=0.01)


def test_depth_table_is_the_measurement(text, profiles):
    rows = depth_rows(text)
    for wiring, shown in rows.items():
        measured = [profiles[(wiring, depth, 0)][0] for depth in (6, 12, 24, 48)]
        assert shown == pytest.approx(measured, rel=0.01), (
            f"{wiring}: the page shows {shown}, torch's modules give {measured}"
        )
    # the 12-layer column agrees with the 12-layer table
    for wiring in rows:
        assert rows[wiring][1] == pytest.approx(stack_row(text, wiring)[4], rel=0.02)


def test_depth_prose_follows_the_numbers(text, profiles):
    rows = depth_rows(text)
    post, pre, norm = rows["post-LN"], rows["pre-LN"], rows["LayerNorm only"]
    shallow = [r for depth in (6, 12, 24) for r in profiles[("post-LN", depth, 0)]]
    post_48, low, high = number(
        text,
        r"With 48 layers the first layer of the post-LN stack receives (\S+) times the gradient "
        r"norm of the last layer, where in the stacks of 6 to 24 layers every layer got "
        r"between (\S+) and (\S+) times",
    )
    assert (low, high) == pytest.approx((min(shallow), max(shallow)), abs=0.006)
    assert post_48 == pytest.approx(post[3], rel=0.02) and post_48 < low, "at 48 layers post-LN tilts toward the output"
    assert high < 1.5, "up to 24 layers the post-LN profile is close to flat"
    spread = {w: [profiles[(w, 48, seed)][0] for seed in range(4)] for w in ("post-LN", "pre-LN", "LayerNorm only")}
    lo, hi = number(text, r"with seeds 0 to 3 the 48-layer ratio ranges from (\S+) to (\S+), below 1 ")
    assert (lo, hi) == pytest.approx((min(spread["post-LN"]), max(spread["post-LN"])), rel=0.02)
    below = sum(ratio < 1 for ratio in spread["post-LN"])
    assert ("below 1 every time" if below == 4 else f"below 1 for {below} of the 4 seeds") in text
    (tilt,) = number(text, r"the last layer gets (\S+) times the first layer.s gradient, not orders of magnitude more")
    assert tilt == pytest.approx(1 / post[3], rel=0.03)
    first, lo, hi = number(
        text, r"In the pre-LN stack the first layer receives (\S+) times the last layer.s \((\S+) to (\S+) over"
    )
    assert (first, lo, hi) == pytest.approx((pre[3], min(spread["pre-LN"]), max(spread["pre-LN"])), rel=0.02) and lo > 1
    assert pre == sorted(pre), "pre-LN's first layer gets relatively more as the stack deepens"
    first, lo, hi = number(
        text,
        r"the first of 48 LayerNorm-only layers receives (\S+) times the last layer.s gradient "
        r"\((\S+) to (\S+) over the four seeds\)",
    )
    assert (first, lo, hi) == pytest.approx(
        (norm[3], min(spread["LayerNorm only"]), max(spread["LayerNorm only"])), rel=0.02
    )
    assert norm == sorted(norm, reverse=True), "LayerNorm only: the shortfall grows with depth"
    assert all(n < p for n, p in zip(spread["LayerNorm only"], spread["post-LN"], strict=False)), (
        "the shortfall is larger without residuals"
    )


def test_summary_follows_the_numbers(text):
    start = re.search(r"Summary#? An encoder layer is", text)
    assert start, "the lesson ends with a summary that starts: An encoder layer is ..."
    summary = text[start.start() :]
    rows = {w: stack_row(text, w) for w in WIRINGS}
    depth = depth_rows(text)
    for wrong in (
        "without residuals the gradient does not reach",
        "keep the activations at a fixed scale",
        "concentrat",
        "does not reach the early layers",
    ):
        assert wrong not in summary, f"the summary still says {wrong!r}"
    plain, norm, norm_48, res, res_1, res_12 = number(
        summary,
        r"the gradient vanishes \(the first layer gets (\S+) times the last layer.s\); a LayerNorm alone pins the "
        r"scale but the gradient loses on its way down \((\S+) times the last layer.s, and (\S+) through 48 "
        r"layers\); residual connections alone carry the gradient \((\S+)\) but let the stream grow \(rms (\S+) to "
        r"(\S+)\)",
    )
    assert plain == pytest.approx(rows["neither"][4], rel=0.05) and plain < 1e-6
    assert norm == pytest.approx(rows["LayerNorm only"][4], rel=0.01) and norm < rows["post-LN"][4]
    assert norm_48 == pytest.approx(depth["LayerNorm only"][3], rel=0.02) and norm_48 < norm
    assert res == pytest.approx(rows["residual only"][4], rel=0.01)
    assert (res_1, res_12) == pytest.approx(rows["residual only"][:2], rel=0.01) and res_12 > res_1
    post_rms, pre_1, pre_12 = number(
        summary,
        r"post-LN holds the activations at rms (\S+) after every layer, pre-LN.s stream "
        r"grows \(rms (\S+) to (\S+) over 12 layers\)",
    )
    assert post_rms == pytest.approx(1, abs=1e-3)
    assert (pre_1, pre_12) == pytest.approx(rows["pre-LN"][:2], rel=0.01) and pre_12 > pre_1
    low, high, post_48, pre_48 = number(
        summary,
        r"Post-LN.s gradient profile stays within (\S+) to (\S+) times the last layer.s up to 24 layers and tilts "
        r"mildly toward the output at 48 \(the first layer gets (\S+) times the last layer.s\).*?pre-LN.s tilts "
        r"toward the input \((\S+) at 48 layers\)",
    )
    assert low <= min(depth["post-LN"][:3]) and max(depth["post-LN"][:3]) <= high
    assert post_48 == pytest.approx(depth["post-LN"][3], rel=0.02) and 0.1 < post_48 < low
    assert pre_48 == pytest.approx(depth["pre-LN"][3], rel=0.02) and pre_48 > 1


def test_figures(book, lesson_html):
    tags = [tag for tag in re.findall(r"<img[^>]+>", lesson_html) if "_images/" in tag]
    assert len(tags) >= 2, "the lesson should show the 12-layer measurements and the post-LN / pre-LN profiles"
    for tag in tags:
        (src,) = re.findall(r'src="([^"]+)"', tag)
        assert (book.html_dir / "chapters" / src).resolve().is_file(), f"missing image {src}"
        alt = re.search(r'alt="([^"]*)"', tag)
        assert alt and len(alt.group(1)) > 40, f"the figure {src} has no alt text"


def test_links_to_the_exercise(lesson_html):
    assert 'href="07_encoder.html"' in lesson_html


def test_the_wiring_figure(book, lesson_html, text):
    """Issue 22: one encoder layer, post-LN and pre-LN side by side, drawn from what post_ln and pre_ln record;
    the alt text gives each order as the equations of the page have it."""
    tag = re.search(r'<img alt="(Two diagrams of one encoder layer[^"]+)"[^>]*src="([^"]+)"', lesson_html)
    assert tag, "the post-LN / pre-LN figure, with its alt text, is not on the page"
    alt, src = tag.groups()
    assert (book.html_dir / "chapters" / src).resolve().stat().st_size > 5_000
    post, pre = alt.split("Pre-LN on the right")
    orders = {  # x <- norm(x + sublayer(x)) twice; x <- x + sublayer(norm(x)) twice
        "post": (post, ["self-attention", "plus node", "LayerNorm 1", "feed-forward", "plus node", "LayerNorm 2"]),
        "pre": (pre, ["LayerNorm 1", "self-attention", "plus node", "LayerNorm 2", "feed-forward", "plus node"]),
    }
    for name, (part, steps) in orders.items():
        at, positions = 0, []
        for step in steps:
            at = part.find(step, at)
            positions.append(at)
            at += 1
        assert -1 not in positions, f"{name}-LN: the alt text does not give the order {steps}"
    assert "vermilion residual path never passes through a LayerNorm" in pre
    assert "drawn from what post_ln and pre_ln above do" in text


def test_terms_are_taught_before_they_are_used(text):
    """Issue 29: the residual stream is defined where the page first names it, and `enable_nested_tensor=False` is
    explained before the first code that passes it."""
    text = text.replace("’", "'")
    first = text.index("residual stream")
    assert text.startswith("residual stream alone (the running value", first)
    explained = text.index("The comparison below builds torch's encoder with enable_nested_tensor=False")
    assert explained < text.index("enable_nested_tensor=False).double()")
    assert "nested tensor (one that stores each sequence at its own length, without the padding)" in text
