"""Provided code: course/provided.py is correct, and `release` keeps the provided cells of the
notebooks in step with it and out of the solution regions."""

from __future__ import annotations

import shutil

import nbformat
import pytest
import torch
import torch.nn.functional as F

from autograder import config
from autograder.model.notebooks import read, solution_paths
from course.provided import causal_mask, padding_mask, scaled_dot_product_attention
from coursetools import layout
from coursetools.release import (
    PROVIDED_HEADER,
    ProvidedModule,
    SourceError,
    provided_names,
    release,
    validate_sources,
)

ALL_NAMES = ["causal_mask", "padding_mask", "scaled_dot_product_attention"]


# --- the reference code itself -----------------------------------------------------------------


def test_causal_mask():
    for size in (1, 2, 5):
        mask = causal_mask(size)
        assert mask.dtype == torch.bool and mask.shape == (size, size)
        expected = [[key <= query for key in range(size)] for query in range(size)]
        assert mask.tolist() == expected
    assert causal_mask(3, device="meta").device.type == "meta"


def test_padding_mask():
    mask = padding_mask([0, 2, 4], 4)
    assert mask.dtype == torch.bool and mask.shape == (3, 1, 1, 4)
    assert mask[:, 0, 0].tolist() == [[False] * 4, [True, True, False, False], [True] * 4]
    assert torch.equal(padding_mask(torch.tensor([3, 1]), 3), padding_mask([3, 1], 3))
    assert padding_mask(torch.tensor([1], device="meta"), 2).device.type == "meta"
    # combined with a causal mask by &, broadcast to (batch, heads, L, L)
    both = padding_mask([2, 3], 3) & causal_mask(3)
    assert both.shape == (2, 1, 3, 3) and both[0, 0].tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, False],
    ]


def _qkv(*batch, l_q=4, l_k=6, d_k=8, d_v=3, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*batch, l_q, d_k, generator=gen, dtype=dtype),
        torch.randn(*batch, l_k, d_k, generator=gen, dtype=dtype),
        torch.randn(*batch, l_k, d_v, generator=gen, dtype=dtype),
    )


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_attention_equals_torch_without_mask(batch):
    q, k, v = _qkv(*batch)
    output, weights = scaled_dot_product_attention(q, k, v)
    assert output.shape == (*batch, 4, 3) and weights.shape == (*batch, 4, 6)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v), atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(weights, torch.softmax(q @ k.transpose(-2, -1) / 8**0.5, dim=-1), atol=1e-12, rtol=1e-10)


def test_attention_equals_torch_on_rows_not_fully_masked():
    q, k, v = _qkv(2, 2, l_q=5, l_k=5)  # (batch, heads, L, d)
    mask = padding_mask([5, 3], 5) & causal_mask(5)  # (2, 1, 5, 5): no row fully masked
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-12, rtol=1e-10)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 5, dtype=torch.float64), atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fully_masked_rows_give_zero_output_and_finite_gradients(dtype):
    q, k, v = (t.requires_grad_() for t in _qkv(3, l_q=4, l_k=4, dtype=dtype, seed=1))
    # sequence 0 has no real key at all; sequence 1 has keys 0..1; sequence 2 all four.
    mask = padding_mask([0, 2, 4], 4)[:, 0]  # (batch, 1, L_k)
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    assert (output[0] == 0).all() and (weights[0] == 0).all(), "a fully masked row must give exactly 0"
    torch.testing.assert_close(output[1:], F.scaled_dot_product_attention(q[1:], k[1:], v[1:], attn_mask=mask[1:]))
    (output.square().sum() + weights.sum()).backward()
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), f"non-finite gradient for {name}"
        assert (t.grad[0] == 0).all(), f"sequence 0 is fully masked: no gradient should reach {name}"


def test_large_scores_stay_finite():
    q, k, v = _qkv(2, dtype=torch.float32, seed=2)
    output, weights = scaled_dot_product_attention(1e4 * q, 1e4 * k, v, causal_mask(6)[:4])
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()


# --- generating provided cells -------------------------------------------------------------------


def test_generated_cell_defines_the_reference_code():
    source = ProvidedModule().cell_source(ALL_NAMES)
    assert source.splitlines()[0] == f"{PROVIDED_HEADER} {', '.join(ALL_NAMES)}"
    assert "import torch" in source.splitlines()
    namespace: dict = {}
    exec(compile(source, "<provided>", "exec"), namespace)  # what a student notebook runs
    q, k, v = _qkv(2, seed=3)
    mask = namespace["padding_mask"]([6, 2], 6)[:, 0] & namespace["causal_mask"](6)[:4]
    for mine, ref in zip(
        namespace["scaled_dot_product_attention"](q, k, v, mask),
        scaled_dot_product_attention(q, k, v, mask),
        strict=False,
    ):
        assert torch.equal(mine, ref)


def test_generated_cell_takes_only_the_imports_it_uses(tmp_path):
    module = tmp_path / "provided.py"
    module.write_text(
        '"""doc"""\nimport math\nimport torch\nimport torch.nn.functional as F\n\n\n'
        "def half(x):\n    return x / 2\n\n\n"
        "def root(x):\n    return math.sqrt(half(x))\n\n\n"
        "def act(x):\n    return F.relu(torch.as_tensor(x))\n",
        encoding="utf-8",
    )
    provided = ProvidedModule(module)
    assert provided.cell_source(["half"]).splitlines()[2:4] == ["", ""]  # no import at all
    assert [line for line in provided.cell_source(["half", "root"]).splitlines() if "import" in line] == ["import math"]
    assert [line for line in provided.cell_source(["act"]).splitlines() if "import" in line] == [
        "import torch",
        "import torch.nn.functional as F",
    ]
    assert provided.problems(["root"]) == ["'root' uses 'half': name it in the cell's first line too"]
    assert provided.problems(["half", "root"]) == []
    assert provided.problems(["nope"]) == ["provided.py defines no function or class 'nope'"]
    module.write_text("import torch\nSCALE = 2\n", encoding="utf-8")
    with pytest.raises(SourceError, match="only imports, functions and classes"):
        ProvidedModule(module)


# --- release keeps provided cells fresh, and solutions apart from them ---------------------------


def _cell(source, kind, grade_id, **extra):
    make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = make(source)
    meta = {
        "grade": False,
        "solution": False,
        "locked": False,
        "grade_id": grade_id,
        "schema_version": 3,
        "task": False,
    }
    meta.update(extra)
    cell.metadata["nbgrader"] = meta
    return cell


def _source_notebook(provided_body: str, solution_line: str = "y = x + 1") -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(
        cells=[
            _cell("# A test notebook", "markdown", "tp_intro", locked=True),
            _cell(f"{PROVIDED_HEADER} causal_mask\n{provided_body}", "code", "tp_provided", locked=True),
            _cell(
                f"def f(x):\n    ### BEGIN SOLUTION\n    {solution_line}\n    return y\n    ### END SOLUTION",
                "code",
                "tp_answer",
                solution=True,
            ),
            _cell(
                "assert f(1) == 2, 'f adds one'\n### BEGIN HIDDEN TESTS\nassert f(2) == 3, 'f adds one'\n### END "
                "HIDDEN TESTS",
                "code",
                "tp_test",
                grade=True,
                locked=True,
                points=1,
            ),
        ]
    )


def _write(nb, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return path


def test_release_regenerates_a_stale_provided_cell(tmp_path):
    solutions, released = tmp_path / "solutions", tmp_path / "chapters"
    source = _write(
        _source_notebook("def causal_mask(size):\n    return 'an old version'"), solutions / "99_test.ipynb"
    )

    stale = release(check=True, solutions_dir=solutions, release_dir=released)
    assert [s.path for s in stale] == [source, released / "99_test.ipynb"]
    assert stale[0].reasons == ("99_test.ipynb cell 1 (tp_provided): provided code differs from provided.py",)
    assert stale[1].reasons == (), "a released notebook differs; no more is said"
    assert "an old version" in source.read_text(encoding="utf-8"), "--check must not write"

    release(solutions_dir=solutions, release_dir=released)
    expected = ProvidedModule().cell_source(["causal_mask"])
    assert read(source).cells[1].source == expected, "release writes the fresh cell back into solutions/"
    student = read(released / "99_test.ipynb")
    assert student.cells[1].source == expected and student.cells[1].metadata.nbgrader["locked"]
    assert release(check=True, solutions_dir=solutions, release_dir=released) == []


def test_check_names_the_stale_notebook_and_cell_on_the_command_line(tmp_path, monkeypatch, capsys):
    from autograder import cli

    solutions, released = tmp_path / "solutions", tmp_path / "chapters"
    shutil.copytree(config.SOLUTIONS_DIR, solutions)
    shutil.copytree(layout.RELEASE_DIR, released, ignore=shutil.ignore_patterns("*.md"))
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(config, "SOLUTIONS_DIR", solutions)
    monkeypatch.setattr(layout, "RELEASE_DIR", released)
    assert cli.main(["release", "--check"]) == 0
    with_provided = [p for p in solution_paths(solutions) if any(provided_names(c) for c in read(p).cells)]
    if not with_provided:
        pytest.skip("no source notebook has a provided cell yet")
    path = with_provided[0]
    nb = read(path)
    index, cell = next((i, c) for i, c in enumerate(nb.cells) if provided_names(c))
    cell.source = cell.source.replace("def ", "def  ", 1)  # a hand edit
    _write(nb, path)
    assert cli.main(["release", "--check"]) == 1
    err = capsys.readouterr().err
    assert f"solutions/{path.name}" in err and f"{path.name} cell {index}" in err, err


def test_a_solution_line_that_repeats_provided_code_is_refused(tmp_path):
    body = ProvidedModule().cell_source(["causal_mask"]).split("\n", 1)[1]
    shared = "return torch.ones((size, size), dtype=torch.bool, device=device).tril()"
    assert shared in body
    path = _write(_source_notebook(body, solution_line=f"y = x + 1; {shared}"), tmp_path / "99_test.ipynb")
    with pytest.raises(SourceError) as excinfo:
        validate_sources([path])
    assert "99_test.ipynb cell 2 (tp_answer): solution line" in str(excinfo.value)
    assert "provided.py: causal_mask" in str(excinfo.value)
    # A solution line contained in a provided line is refused too (students would see it there).
    _write(_source_notebook(body, solution_line="torch.ones((size, size), dtype=torch.bool, device=device)"), path)
    with pytest.raises(SourceError, match="repeats provided code"):
        validate_sources([path])
    _write(_source_notebook(body), path)
    validate_sources([path])


def test_a_provided_cell_must_be_locked_and_name_known_code(tmp_path):
    nb = _source_notebook("")
    nb.cells[1].metadata.nbgrader["locked"] = False
    nb.cells[1].source = f"{PROVIDED_HEADER} causal_mask, no_such_function"
    path = _write(nb, tmp_path / "99_test.ipynb")
    with pytest.raises(SourceError) as excinfo:
        validate_sources([path])
    message = str(excinfo.value)
    assert "a provided cell must be locked" in message
    assert "defines no function or class 'no_such_function'" in message


def test_no_solution_region_repeats_provided_code():
    validate_sources(solution_paths())  # every real source notebook, every line of course/provided.py


# --- the modules chapters 07 and 08 build on, equal to torch.nn's once weights are copied --------

from course.provided import (  # noqa: E402
    Encoder,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    PositionalEncoding,
    sinusoidal_positional_encoding,
)


def _copy_attention(mine: MultiHeadAttention, theirs: torch.nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(torch.cat([mine.w_q.weight, mine.w_k.weight, mine.w_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([mine.w_q.bias, mine.w_k.bias, mine.w_v.bias]))
    theirs.out_proj.weight.copy_(mine.w_o.weight)
    theirs.out_proj.bias.copy_(mine.w_o.bias)


def _copy_encoder_layer(mine: EncoderLayer, theirs: torch.nn.TransformerEncoderLayer) -> None:
    _copy_attention(mine.self_attn, theirs.self_attn)
    for a, b in (
        (mine.feed_forward.linear1, theirs.linear1),
        (mine.feed_forward.linear2, theirs.linear2),
        (mine.norm1, theirs.norm1),
        (mine.norm2, theirs.norm2),
    ):
        b.weight.copy_(a.weight)
        b.bias.copy_(a.bias)


def _copy_stack(mine: torch.nn.Module, theirs: torch.nn.Module, copy_layer) -> None:
    """Our Encoder/Decoder (layers, norm) -> torch's TransformerEncoder/TransformerDecoder."""
    with torch.no_grad():
        for a, b in zip(mine.layers, theirs.layers, strict=False):
            copy_layer(a, b)
        theirs.norm.weight.copy_(mine.norm.weight)
        theirs.norm.bias.copy_(mine.norm.bias)


def _randomise_norms(module: torch.nn.Module, gen: torch.Generator) -> None:
    """LayerNorm's default weight 1 and bias 0 would hide a norm applied twice or to the wrong tensor."""
    for m in module.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=gen, dtype=m.weight.dtype))
            m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=gen, dtype=m.bias.dtype))


def test_positional_encoding_matches_the_formula():
    pe = sinusoidal_positional_encoding(50, 16).double()
    p, i = torch.arange(50.0, dtype=torch.float64)[:, None], torch.arange(0, 16, 2, dtype=torch.float64)
    angle = p / 10000 ** (i / 16)
    torch.testing.assert_close(pe[:, 0::2], angle.sin(), atol=1e-5, rtol=0)
    torch.testing.assert_close(pe[:, 1::2], angle.cos(), atol=1e-5, rtol=0)
    with pytest.raises(ValueError):
        sinusoidal_positional_encoding(4, 5)
    module = PositionalEncoding(16, max_len=50)
    assert "pe" in dict(module.named_buffers()) and "pe" in module.state_dict() and not list(module.parameters())
    x = torch.randn(2, 7, 16)
    before = x.clone()
    torch.testing.assert_close(module(x), before + pe[:7].float(), atol=1e-6, rtol=0)
    assert torch.equal(x, before), "forward must leave x unchanged"


@pytest.mark.parametrize("bias", [True, False])
def test_multi_head_attention_equals_torch(bias):
    torch.manual_seed(0)
    mine = MultiHeadAttention(12, 3, bias=bias).double().eval()
    theirs = torch.nn.MultiheadAttention(12, 3, bias=bias, batch_first=True).double().eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([mine.w_q.weight, mine.w_k.weight, mine.w_v.weight]))
        theirs.out_proj.weight.copy_(mine.w_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([mine.w_q.bias, mine.w_k.bias, mine.w_v.bias]))
            theirs.out_proj.bias.copy_(mine.w_o.bias)
    query, memory = torch.randn(2, 4, 12, dtype=torch.float64), torch.randn(2, 6, 12, dtype=torch.float64)
    keep = padding_mask([6, 3], 6)  # (2, 1, 1, 6)
    output, weights = mine(query, memory, memory, keep)
    expected, expected_weights = theirs(
        query, memory, memory, key_padding_mask=~keep[:, 0, 0], average_attn_weights=False
    )
    assert weights.shape == (2, 3, 4, 6)
    torch.testing.assert_close(output, expected, atol=1e-10, rtol=1e-8)
    torch.testing.assert_close(weights, expected_weights, atol=1e-10, rtol=1e-8)
    with pytest.raises(ValueError):
        MultiHeadAttention(10, 3)


def test_feed_forward_is_relu_between_two_linears():
    torch.manual_seed(1)
    ff = FeedForward(6, 10)
    x = torch.randn(2, 3, 6)
    torch.testing.assert_close(ff(x), ff.linear2(torch.relu(ff.linear1(x))), atol=0, rtol=0)
    assert (ff.linear1.in_features, ff.linear1.out_features, ff.linear2.out_features) == (6, 10, 6)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_equals_torch(norm_first):
    torch.manual_seed(2)
    gen = torch.Generator().manual_seed(3)
    mine = Encoder(16, 4, 32, num_layers=3, dropout=0.2, norm_first=norm_first).double().eval()
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.2, batch_first=True, norm_first=norm_first)
    theirs = (
        torch.nn.TransformerEncoder(layer, 3, norm=torch.nn.LayerNorm(16), enable_nested_tensor=False).double().eval()
    )
    with torch.no_grad():
        _randomise_norms(mine, gen)
    _copy_stack(mine, theirs, _copy_encoder_layer)
    assert len({id(layer.self_attn.w_q.weight) for layer in mine.layers}) == 3
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    keep = padding_mask([5, 2, 4], 5)
    expected = theirs(x, src_key_padding_mask=~keep[:, 0, 0])
    got = mine(x, keep)
    real = keep[:, 0, 0]  # torch's fast path may leave padded positions' outputs unspecified: compare real ones
    torch.testing.assert_close(got[real], expected[real], atol=1e-10, rtol=1e-8)
    one = EncoderLayer(16, 4, 32, norm_first=norm_first).double().eval()
    ref = (
        torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
        .double()
        .eval()
    )
    with torch.no_grad():
        _randomise_norms(one, gen)
        _copy_encoder_layer(one, ref)
    torch.testing.assert_close(one(x), ref(x), atol=1e-10, rtol=1e-8)


# --- the encoder-decoder chapters 09 and 10 build on ----------------------------------------------

from course.provided import Decoder, DecoderLayer, Transformer  # noqa: E402


def _copy_decoder_layer(mine: DecoderLayer, theirs: torch.nn.TransformerDecoderLayer) -> None:
    _copy_attention(mine.self_attn, theirs.self_attn)
    _copy_attention(mine.cross_attn, theirs.multihead_attn)
    for a, b in (
        (mine.feed_forward.linear1, theirs.linear1),
        (mine.feed_forward.linear2, theirs.linear2),
        (mine.norm1, theirs.norm1),
        (mine.norm2, theirs.norm2),
        (mine.norm3, theirs.norm3),
    ):
        b.weight.copy_(a.weight)
        b.bias.copy_(a.bias)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_equals_torch(norm_first):
    torch.manual_seed(4)
    gen = torch.Generator().manual_seed(5)
    mine = Decoder(12, 3, 24, num_layers=2, dropout=0.3, norm_first=norm_first).double().eval()
    layer = torch.nn.TransformerDecoderLayer(12, 3, 24, dropout=0.3, batch_first=True, norm_first=norm_first)
    theirs = torch.nn.TransformerDecoder(layer, 2, norm=torch.nn.LayerNorm(12)).double().eval()
    with torch.no_grad():
        _randomise_norms(mine, gen)
    _copy_stack(mine, theirs, _copy_decoder_layer)
    assert mine.layers[0].cross_attn is not mine.layers[0].self_attn
    x, memory = torch.randn(3, 5, 12, dtype=torch.float64), torch.randn(3, 6, 12, dtype=torch.float64)
    keep, causal = padding_mask([6, 2, 4], 6), causal_mask(5)
    expected = theirs(x, memory, tgt_mask=~causal, memory_key_padding_mask=~keep[:, 0, 0])
    torch.testing.assert_close(mine(x, memory, tgt_mask=causal, memory_mask=keep), expected, atol=1e-10, rtol=1e-8)


def test_transformer_equals_torch():
    """Embeddings x sqrt(d_model) + the sinusoidal table, torch.nn.Transformer, a linear generator."""
    torch.manual_seed(6)
    mine = Transformer(9, 11, d_model=16, num_heads=4, num_layers=2, d_ff=32, dropout=0.1, max_len=20).double().eval()
    theirs = torch.nn.Transformer(16, 4, 2, 2, 32, dropout=0.1, batch_first=True).double().eval()
    _copy_stack(mine.encoder, theirs.encoder, _copy_encoder_layer)
    _copy_stack(mine.decoder, theirs.decoder, _copy_decoder_layer)
    src, tgt = torch.randint(9, (2, 7)), torch.randint(11, (2, 5))
    keep, causal = padding_mask([7, 4], 7), causal_mask(5)
    pe = sinusoidal_positional_encoding(20, 16).double()

    def embed(table, ids):
        return table(ids) * 4.0 + pe[: ids.shape[1]]  # sqrt(16) = 4

    features = theirs(
        embed(mine.src_embed, src),
        embed(mine.tgt_embed, tgt),
        tgt_mask=~causal,
        src_key_padding_mask=~keep[:, 0, 0],
        memory_key_padding_mask=~keep[:, 0, 0],
    )
    torch.testing.assert_close(
        mine(src, tgt, src_mask=keep, tgt_mask=causal), mine.generator(features), atol=1e-10, rtol=1e-8
    )
    assert sum(p.numel() for p in mine.parameters()) == (
        sum(p.numel() for p in theirs.parameters()) + (9 + 11) * 16 + mine.generator.weight.numel() + 11
    )


# --- the decoder-only language model of chapter 10, and its cache interface -----------------------

from course.provided import DecoderOnlyBlock, DecoderOnlyLM  # noqa: E402


class _ListCache:
    """The cache contract chapter 10's exercise asks for, written plainly: per layer, keys and values
    concatenated along the sequence axis (dim 2)."""

    def __init__(self):
        self.keys, self.values, self.calls = {}, {}, []

    def update(self, layer_index, k, v):
        self.calls.append((layer_index, tuple(k.shape)))
        if layer_index in self.keys:
            k, v = torch.cat([self.keys[layer_index], k], dim=2), torch.cat([self.values[layer_index], v], dim=2)
        self.keys[layer_index], self.values[layer_index] = k, v
        return k, v


def test_decoder_only_lm_equals_torch_causal_encoder():
    """Without a cache: embeddings + learned positions, torch's pre-LN encoder layers under a causal mask,
    a final LayerNorm and a linear head."""
    torch.manual_seed(7)
    gen = torch.Generator().manual_seed(8)
    mine = DecoderOnlyLM(13, d_model=12, num_heads=3, num_layers=2, d_ff=20, dropout=0.3, max_len=16).double().eval()
    with torch.no_grad():
        _randomise_norms(mine, gen)
    layer = torch.nn.TransformerEncoderLayer(12, 3, 20, dropout=0.3, batch_first=True, norm_first=True)
    theirs = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).double().eval()
    with torch.no_grad():
        for a, b in zip(mine.layers, theirs.layers, strict=False):
            _copy_encoder_layer(a, b)
    tokens = torch.randint(13, (3, 9), generator=gen)
    h = mine.token_embed(tokens) + mine.pos_embed.weight[:9]
    expected = mine.head(mine.norm(theirs(h, mask=~causal_mask(9))))
    torch.testing.assert_close(mine(tokens), expected, atol=1e-10, rtol=1e-8)
    # start_pos shifts the positions: the same tokens at positions 4..12
    h = mine.token_embed(tokens) + mine.pos_embed.weight[4:13]
    expected = mine.head(mine.norm(theirs(h, mask=~causal_mask(9))))
    torch.testing.assert_close(mine(tokens, start_pos=4), expected, atol=1e-10, rtol=1e-8)
    assert isinstance(mine.layers[0], DecoderOnlyBlock) and mine.head.out_features == 13
    with pytest.raises(ValueError, match="max_len"):
        mine(tokens, start_pos=8)


@pytest.mark.parametrize("chunks", [(5, 1, 1, 1, 1), (1,) * 9, (3, 4, 2), (9,)])
def test_decoder_only_lm_with_a_cache_equals_one_pass(chunks):
    torch.manual_seed(9)
    model = DecoderOnlyLM(11, d_model=16, num_heads=4, num_layers=3, d_ff=24, dropout=0.5, max_len=12).double().eval()
    tokens = torch.randint(11, (2, sum(chunks)))
    full = model(tokens)
    cache, start, pieces = _ListCache(), 0, []
    for size in chunks:
        pieces.append(model(tokens[:, start : start + size], cache=cache, start_pos=start))
        start += size
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-12, rtol=1e-10)
    # each forward pass updates layers 0, 1, 2 in order, with (batch, heads, L_new, d_k)
    assert [i for i, _ in cache.calls] == [0, 1, 2] * len(chunks)
    assert [shape for _, shape in cache.calls[::3]] == [(2, 4, size, 4) for size in chunks]
    assert cache.keys[2].shape == (2, 4, sum(chunks), 4)


def test_decoder_only_lm_sees_what_the_cache_returns():
    """The model attends over whatever update returns: a cache that drops the past changes the output
    (so a wrong cache shows), and wrong positions change it too."""
    torch.manual_seed(10)
    model = DecoderOnlyLM(7, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0, max_len=10).double().eval()
    tokens = torch.randint(7, (1, 6))
    full = model(tokens)

    class Forgetful(_ListCache):
        def update(self, layer_index, k, v):
            super().update(layer_index, k, v)
            return k, v

    forgetful = Forgetful()
    model(tokens[:, :5], cache=forgetful, start_pos=0)
    assert not torch.allclose(model(tokens[:, 5:], cache=forgetful, start_pos=5), full[:, 5:])
    cache = _ListCache()
    model(tokens[:, :5], cache=cache, start_pos=0)
    assert not torch.allclose(model(tokens[:, 5:], cache=cache, start_pos=0), full[:, 5:])
    noisy = DecoderOnlyLM(7, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.5, max_len=10).double().train()
    assert not torch.equal(noisy(tokens), noisy(tokens)), "dropout acts in train() mode"
    noisy.eval()
    assert torch.equal(noisy(tokens), noisy(tokens)), "and not in eval() mode"
