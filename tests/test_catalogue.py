"""Every catalogued implementation of every exercise is graded through the real autograder.

Wrong implementations must lose exactly the cells their file names; correct ones must
score full marks; the untouched release scores zero with every test failing on its own;
every graded cell's hidden tests must catch at least one wrong implementation that its
visible self-check lets through (otherwise the hidden part of that cell proves nothing); and
every visible self-check must catch the catalogued mistakes its lesson warns about
(LESSON_WARNINGS, below); and one slip never costs most of a notebook unseen (the one-slip rule, below).
All chapters are graded in one `grade` run (and once more against the released notebooks,
for the visible checks alone).
"""

from __future__ import annotations

import os

import pytest

from autograder.model.notebooks import max_points, read, source_notebook
from conftest import catalogued_notebooks
from coursetools.samples import implementations

pytestmark = [pytest.mark.grading, pytest.mark.slow]

NOTEBOOKS = catalogued_notebooks()
WRONG = [(nb, impl) for nb in NOTEBOOKS for impl in implementations(nb, "wrong")]
CORRECT = [(nb, impl) for nb in NOTEBOOKS for impl in implementations(nb, "correct")]
CELLS = [(nb, cell) for nb in NOTEBOOKS for cell in max_points(read(source_notebook(nb)))]


def failed_cells(result) -> set[str]:
    return {c.grade_id for c in result.cells if not c.passed}


def case_id(case) -> str:
    notebook, item = case
    return f"{notebook.split('_')[0]}-{getattr(item, 'name', item)}"


def test_there_are_catalogues():
    if os.environ.get("CATALOGUES"):  # a maintainer asked for some chapters only: those must exist
        assert NOTEBOOKS, f"no catalogue matches CATALOGUES={os.environ['CATALOGUES']}"
    else:
        assert "02_dot_product_attention" in NOTEBOOKS and len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_catalogue_is_big_enough(notebook):
    wrong, correct = implementations(notebook, "wrong"), implementations(notebook, "correct")
    cells = set(max_points(read(source_notebook(notebook))))
    assert len(wrong) >= 8 and len(correct) >= 3, f"{notebook}: {len(wrong)} wrong, {len(correct)} correct"
    for impl in wrong:
        assert impl.expect_fail, f"{impl.name}: no expect-fail line"
        assert impl.expect_fail <= cells, f"{impl.name}: unknown cells {impl.expect_fail - cells}"


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_solution_scores_full_marks(catalogues, notebook):
    result = catalogues[notebook]["solution"]
    assert result.score == result.max_score == sum(max_points(read(source_notebook(notebook))).values())
    assert not result.reason and not result.repairs


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_released_notebook_scores_zero_without_crashing(catalogues, notebook):
    result = catalogues[notebook]["released"]
    assert result.score == 0 and result.max_score > 0
    assert not result.reason, "the untouched release must run to the end, every test failing on its own"
    assert all("NotImplementedError" in c.message for c in result.cells), [
        (c.grade_id, c.message) for c in result.cells
    ]


@pytest.mark.parametrize("case", WRONG, ids=case_id)
def test_wrong_implementation_loses_the_right_cells(catalogues, case):
    notebook, impl = case
    result = catalogues[notebook][f"wrong-{impl.name}"]
    assert not result.reason, result.reason
    failed = failed_cells(result)
    assert failed == impl.expect_fail, (
        f"{impl.description}\n  should fail: {sorted(impl.expect_fail)}\n  failed:      {sorted(failed)}\n"
        + "\n".join(f"  {c.grade_id}: {c.message}" for c in result.cells if not c.passed)
    )
    for cell in result.cells:
        if not cell.passed:
            assert cell.points == 0 and cell.message, f"{cell.grade_id} failed without a message"


@pytest.mark.parametrize("case", CORRECT, ids=case_id)
def test_alternative_correct_implementation_scores_full_marks(catalogues, catalogues_visible_only, case):
    notebook, impl = case
    for results in (catalogues, catalogues_visible_only):
        result = results[notebook][f"correct-{impl.name}"]
        assert result.score == result.max_score, [(c.grade_id, c.message) for c in result.cells if not c.passed]


@pytest.mark.parametrize("case", CELLS, ids=case_id)
def test_hidden_tests_of_each_cell_catch_a_mistake_the_visible_ones_miss(catalogues, catalogues_visible_only, case):
    notebook, cell = case
    caught = sorted(
        impl.name
        for impl in implementations(notebook, "wrong")
        if cell in failed_cells(catalogues[notebook][f"wrong-{impl.name}"])
        and cell not in failed_cells(catalogues_visible_only[notebook][f"wrong-{impl.name}"])
    )
    assert caught, f"the hidden tests of {cell} catch no catalogued mistake that its visible self-check misses"


# The one-slip rule. Every wrong file holds one mistake (one slip a student could make; the catalogues' READMEs say
# so): such a file is either caught before submission, by a visible self-check of the released notebook, or loses at
# most half of its notebook's points. A slip that only hidden tests see must not cost most of the grade.
@pytest.mark.parametrize("case", WRONG, ids=case_id)
def test_one_slip_is_seen_before_submission_or_costs_at_most_half(catalogues, catalogues_visible_only, case):
    notebook, impl = case
    result = catalogues[notebook][f"wrong-{impl.name}"]
    seen_early = failed_cells(catalogues_visible_only[notebook][f"wrong-{impl.name}"])
    lost = result.max_score - result.score
    assert seen_early or lost <= result.max_score / 2, (
        f"{impl.description}\n  no visible self-check fails on it, and it loses {lost:g} of {result.max_score:g} "
        f"points, in {', '.join(sorted(failed_cells(result)))}"
        + ": add a visible check for it, or make the hidden tests of the cells it should not fail independent of it"
    )


# The mistakes each lesson warns about, per graded cell: {notebook: {grade_id: catalogued wrong files}}. The visible
# self-check of that cell must catch every one of them (the hidden tests then catch the rest). "Lesson" is the
# chapter's page (chapters/NN_*.md) or the exercise notebook's own text; the comments quote where it warns.
LESSON_WARNINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "01_soft_lookup": {
        # 01_why_attention.md, "Common mistakes in a soft lookup": "**Averaging the keys.** The output is the weights
        # times the *values*"
        "ch01_output_one_query": ("weights_times_keys",),
        # same list: "**Multiplying by the temperature.** $T$ divides the similarities"
        "ch01_temperature": ("temperature_multiplied",),
        # same list: "**Softmax over the wrong axis.** ... the softmax goes over the keys, the last axis"
        "ch01_batch": ("softmax_over_queries",),
        # same list: "**No max subtraction.** Fine for similarities near 1, `nan` as soon as ..."; the notebook:
        # "Subtracting each query's largest similarity first fixes it"
        "ch01_stability": ("no_max_subtraction", "global_max"),
    },
    "02_dot_product_attention": {
        # notebook: "Since softmax(x) = softmax(x - c) ..., subtract the maximum along `dim` first ... Take **each
        # row's own** maximum ..., not one maximum of the whole tensor"; 02_attention_by_hand.md, "Why softmax
        # subtracts the max"
        "softmax_stable": ("softmax_no_max", "softmax_global_max"),
        # notebook: "`softmax` **must not modify its input**: `x -= x.max(...)` changes the caller's tensor (the first
        # check below tries it)"
        "softmax_values": ("softmax_subtracts_in_place",),
        # 02_attention_by_hand.md, "Two common mistakes with this example": "Stating the scaled formula but computing
        # the unscaled numbers"; "Common mistakes with the scale": "Dividing by $d_k$ instead of $\sqrt{d_k}$"
        "sdpa_worked_examples": ("no_scale", "scale_by_dk"),
        # notebook: "set the score to $-\infty$ **before** the softmax, so that those weights come out exactly 0"
        "sdpa_mask": ("mask_after_softmax",),
    },
    "03_masked_attention": {
        # notebook: "Use `max_len`, not the longest length in the batch"; 03_masks.md: "Bug 3: a float copy of our mask
        # passed to F.sdpa: float masks are *added*"
        "ch03_padding_from_lengths": ("padding_longest_length", "float_masks"),
        # notebook: "`True` **on and below** the diagonal: row $i$ (the query) may attend to keys $0, \dots, i$,
        # itself included"
        "ch03_causal_lower_triangle": ("causal_excludes_diagonal",),
        # notebook: "block the scores **before** the softmax (with `-inf`), do not zero the weights after it";
        # "Careful: `torch.nn.MultiheadAttention`'s `key_padding_mask` and boolean `attn_mask` mean the opposite"
        "ch03_masked_keys_get_zero_weight": ("mask_after_softmax", "mha_convention"),
        # notebook: "`softmax` of a row that is all `-inf` is `0 / 0 = NaN`"; "filling with `-1e9` instead of `-inf`
        # gives no NaN but a *uniform* row"; "the **gradients** must have no NaN either"; 03_masks.md: "A NaN you remove
        # in the forward pass can come back in the backward pass"
        "ch03_fully_masked_rows_are_zero": ("fully_masked_nan", "fully_masked_uniform", "additive_inf_nan_to_num"),
    },
    "04_self_attention": {
        # 04_self_and_cross_attention.md, "A common mistake: the query and the value swapped"
        "ch04_cross_attention": ("swapped_query_value",),
        # notebook: "`w_v` | `nn.Linear(d_model, d_v or d_k, bias=False)` | ... (width `d_v`, or `d_k` when `d_v` is
        # `None`)"
        "ch04_projections": ("value_width_d_k",),
        # notebook: "output = softmax(QK^T / sqrt(d_k)) V" with d_k the width of the queries, not d_model
        "ch04_self_attention_values": ("scale_by_sqrt_d_model",),
    },
    "05_multi_head": {
        # 05_multi_head_attention.md, "Mistakes that keep the shape": merge without the transpose, split along the
        # sequence, scale by sqrt(d_model), softmax over the heads, no output projection
        "ch05_self_attention": (
            "merge_without_transpose",
            "split_along_sequence",
            "scale_by_sqrt_d_model",
            "softmax_over_heads",
            "no_output_projection",
        ),
        # notebook: "The values come from `value`, not from `key`: ... `w_v(key)` goes unnoticed there"
        "ch05_cross_attention": ("values_from_key",),
        # notebook: "`nn.Linear(d_model, d_model, bias=bias)`"; "When `d_model` is not divisible by `num_heads`, the
        # constructor raises a `ValueError` whose message says so"
        "ch05_projections": ("bias_argument_ignored", "assert_without_message"),
        # 05_multi_head_attention.md: "`repeat` puts the masks in the order 0, 1, ..., 0, 1, ... and gives heads the
        # mask of another sequence"; "PyTorch's boolean masks mean the opposite of ours"
        "ch05_masks": ("mask_not_broadcast_over_heads", "mask_in_torch_convention"),
    },
    "06_positions": {
        # 06_positional_encoding.md, "The exponent is $2i/d_{model}$: the `dim // dim_model` bug"; notebook: "sines
        # and cosines are interleaved, and the exponent is $2i/d_{model}$, where $2i$ is the index of the pair's sine
        # column"
        "ch06_table_values": ("dim_floor_div", "not_interleaved", "exponent_i_over_d"),
        # notebook: "**An odd `d_model` is refused.** ... raise `ValueError` with a message saying that `d_model`
        # must be even, in `sinusoidal_positional_encoding` **and** when `PositionalEncoding` is created with an odd
        # `d_model`"
        "ch06_odd_d_model": ("odd_d_model_truncated", "module_without_odd_check"),
        # notebook: "it is saved in `state_dict()` (keep the default `persistent=True`). A plain attribute
        # `self.pe = table` does none of that"
        "ch06_buffer": ("plain_attribute", "buffer_not_persistent"),
        # notebook: "**Do not modify `x`.** `x += self.pe[:L]` changes the caller's tensor"; 06_positional_encoding.md,
        # "Add, do not add in place"; notebook: "as **float32** (...; if you compute it in float64 or with numpy,
        # convert it with `.float()` at the end)"
        "ch06_forward": ("inplace_add", "numpy_table_float64"),
        # notebook: "`nn.Dropout(dropout)` on the sum, which acts only in `train()` mode"
        "ch06_dropout": ("dropout_in_eval",),
    },
    "07_encoder": {
        # 07_encoder_block.md, "How far the usual mistakes move the output": "**No learned parameters** ($\\gamma$ and
        # $\\beta$ as plain tensors or buffers, or none at all)"; notebook: "`weight` | $\\gamma$: an `nn.Parameter`",
        # "with `nn.LayerNorm`'s names"
        "ch07_layernorm_parameters": ("layernorm_no_parameters", "layernorm_buffers", "layernorm_gamma_beta_names"),
        # same section's table and list: the variance divided by d_model - 1, eps outside the square root, the wrong
        # axis, "**In place** (`x -= mu`)"; notebook: "`x` of any shape `(..., d_model)`"
        "ch07_layernorm_forward": (
            "layernorm_unbiased_variance",
            "layernorm_eps_outside_sqrt",
            "layernorm_over_positions",
            "layernorm_inplace",
            "layernorm_fixed_dim_2",
        ),
        # notebook: "post-LN is **not** `norm(x) + sublayer(x)` (the sum goes into the norm)"; "Do not modify `x` in
        # place (`x += ...` changes the caller's tensor)"
        "ch07_post_ln": ("post_ln_norm_plus_sublayer", "inplace_residual"),
        # notebook: "in pre-LN the residual path carries `x` itself, not `norm(x)`"
        "ch07_pre_ln": ("pre_ln_residual_from_normalised",),
        # 07_encoder_block.md: "A classic slip: `F.dropout(x, p)` **without** `training=self.training` is active in
        # `eval()` mode too"
        "ch07_dropout": ("dropout_active_in_eval",),
        # notebook: "`nn.ModuleList([EncoderLayer(...)] * num_layers)` holds **one** layer `num_layers` times"
        "ch07_encoder": ("shared_layers",),
        # 07_encoder_block.md: "a layer that uses the first one twice agrees with the right one until training moves
        # the weights"
        "ch07_gradients": ("one_layernorm_for_both",),
    },
    "08_transformer": {
        # notebook: "A common bug to avoid: calling `cross_attn(memory, memory, x)` (query from the memory)"; "A mask of
        # `None` means **no mask**: do not add a causal mask of your own"
        "ch08_decoder_layer_vs_torch": ("cross_attn_query_value_swapped", "implied_causal_mask"),
        # notebook: "cross-attention: the **query comes from the decoder** (`x`), key and value from `memory`, masked by
        # `memory_mask`"; 08_decoder_and_transformer.md: "Without the causal mask (`tgt_mask=None`) ..." the decoder
        # reads the future
        "ch08_decoder_layer_masks": ("memory_mask_ignored", "causal_mask_ignored"),
        # notebook: "`num_layers` **independent** `DecoderLayer`s (each built on its own, so that each has its own
        # weights)"
        "ch08_decoder": ("shared_decoder_layer",),
        # 08_decoder_and_transformer.md: "Two common slips here: a last layer that projects to `d_model` again ..."
        "ch08_transformer_structure": ("generator_to_d_model",),
        # same: "... and a softmax inside the model"; notebook: "The embeddings are multiplied by $\sqrt{d_{model}}$,
        # not by $d_{model}$, and the positions are added to the target too"
        "ch08_transformer_vs_torch": (
            "softmax_on_logits",
            "embeddings_scaled_by_d_model",
            "no_target_positions",
            # notebook: "`decode(tgt, memory, src_mask=None, tgt_mask=None)`: ... the source's padding mask is the
            # decoder's memory mask"
            "src_mask_not_in_decoder",
        ),
    },
    "09_train_and_decode": {
        # 09_training.md, "A failure clinic": "**labels not shifted**"; notebook: "a label padded with anything else
        # would be counted in the loss"; "Do not modify the lists you are given"
        "ch09_batch_tensors": ("labels_not_shifted", "labels_padded_with_eos", "mutates_inputs"),
        # 09_training.md, "A failure clinic": "**no causal mask**"; notebook: "`j <= i` (causal) **and** `j` is a real
        # token of sequence `b` (not padding)"
        "ch09_batch_masks": ("no_causal_mask", "tgt_mask_causal_only"),
        # 09_training.md: "padding counted: the mistake"; notebook: "Use the `criterion` you are given"; "returning
        # the tensor keeps its whole graph alive"; "decoding leaves it in `eval()` mode, and dropout must be on while
        # training"
        "ch09_train_step_loss": ("own_loss_counts_padding", "returns_tensor", "no_model_train"),
        # notebook: "a sequence that has produced `eos_id` is **finished**: from then on, append `eos_id` to it whatever
        # the model predicts, while the other sequences go on"
        "ch09_decode_known": ("eos_ignored", "batch_stops_at_first_eos"),
    },
    "10_generate": {
        # notebook: "along the sequence axis, `dim=2` (the axis of positions; not the heads, `dim=1`, nor the
        # features, `dim=-1`)"
        "ch10_cache_update": ("cache_cat_heads_axis", "cache_cat_feature_axis"),
        # notebook: "Count positions, not calls to `update`"; "feed **only the newest token**"
        "ch10_generate_steps": ("length_counts_every_update", "whole_sequence_and_cache"),
        # notebook: "create a **new** `KVCache()` for this call (a cache left over from an earlier call, or shared
        # between calls, would hold another sequence's keys)"
        # notebook: "Put the model in `eval()` mode (no dropout)"
        "ch10_generate_details": ("stale_cache_on_the_model", "stale_cache_default_argument", "no_eval"),
        # notebook: "Dividing the *probabilities* by $T$ changes nothing once they are renormalised"; "keep only the
        # `top_k` tokens with the **largest** logits"; "Do not modify `logits`"
        "ch10_sampling": ("temperature_after_softmax", "top_k_smallest", "top_k_in_place"),
    },
    "11_bpe": {
        # notebook, rule 2: "weighted by the word's count"; rule 1: "`"</w>"`, a symbol of its own"
        "ch11_learn_bpe_example": ("no_word_frequencies", "end_marker_glued"),
        # notebook, rule 3: "Not the first pair you happened to count, nor the largest"; rule 4: "Scan each word from
        # left to right"; "A text replace on `"b aa a"` would find `"a a"` across two symbols"; the lesson,
        # 11_tokens_and_families.md: "`str.replace` found `a a` in the last letter of `aa` and the symbol `a` ...
        # Compare symbols, not letters"
        "ch11_learn_bpe_rules": ("ties_first_seen", "ties_largest", "merge_right_to_left", "string_replace_merge"),
        # notebook: "A tokenizer that instead takes the **longest known piece first** ... gives `["ab", "c", "</w>"]`";
        # "start as in rule 1 (its characters, then `"</w>"`)"; the lesson's `str.replace` warning, as above
        # notebook: "A pair may occur several times in one word: merge every occurrence, not only the first"
        "ch11_bpe_encode": (
            "encode_longest_first",
            "encode_string_replace",
            "encode_no_end_of_word",
            "encode_first_occurrence_only",
        ),
    },
    "12_language_model": {
        # notebook: "the targets, the same window shifted by one"; "Start `len(data) - block_size` is one too far:
        # its last target would lie past the end of the text"
        # rule 2: "`torch.randint(high, ...)` ... (note: `high` itself is never drawn)"
        "ch12_get_batch_windows": ("targets_not_shifted", "window_past_the_end", "never_the_last_window"),
        # notebook: "From `generator`, and only from it ... torch's global random state is left alone"
        "ch12_get_batch_generator": ("batch_ignores_generator",),
        # notebook: "Not `len(data) // block_size`: ... the last of those would need a target after the end of the
        # text"; "Return a Python `float` (`.item()`), not a tensor"; "the mean of the batches' means is not the same
        # number when the last batch is smaller than the others"
        "ch12_evaluate_value": ("eval_window_past_the_end", "eval_returns_a_tensor", "eval_mean_of_batch_means"),
        # notebook: "Measure in evaluation mode (`model.eval()` ...) and without gradients (`with torch.no_grad():`
        # ...) ... **restore the mode the model was in**"
        "ch12_evaluate_modes": ("eval_no_eval_mode", "eval_no_no_grad", "eval_left_in_eval_mode"),
        # notebook: "a loss of $L$ nats is $L / \ln 2$ bits. (Reporting nats as if they were bits makes a loss look
        # 31 % smaller ...)"; "a token's bits are shared by its characters" (the formula divides by chars_per_token)
        "ch12_bits_per_character": ("bits_multiplied_by_ln2", "bits_times_chars_per_token"),
        # notebook: "up to **and including the one whose probability makes the sum reach $p$**"; "**Renormalise**:
        # every token outside the nucleus gets probability 0"; "**Token ids, not ranks.**"
        # "**Ties**: a token exactly as probable as a token of the nucleus is in the nucleus too"
        "ch12_top_p_nucleus": (
            "top_p_excludes_the_crossing_token",
            "top_p_ties_split",
            "top_p_not_renormalised",
            "top_p_masked_with_zero",
            "top_p_ranks_not_ids",
        ),
        # notebook: "**Draw** one token per row with `generator`"; "Do not modify `logits`"
        "ch12_top_p_generator": ("top_p_ignores_generator", "top_p_modifies_logits"),
    },
    "13_modern_transformer": {
        # notebook: "No bias, and **no mean subtracted**"; "$\epsilon$ ... goes **inside** the square root"; "Compute in
        # the dtype of `x`: a float64 input gets a float64 computation"
        "ch13_rmsnorm": ("rms_mean_subtracted", "rms_eps_outside_root", "rms_with_bias", "rms_computed_in_float32"),
        # notebook: "SiLU goes on `w1`'s branch only; $\sigma(W_1 x)$ alone would be the original GLU"
        "ch13_swiglu": ("swiglu_gate_on_wrong_branch", "swiglu_sigmoid_gate"),
        # notebook: "**The pairing.** Pairs are adjacent features"; "**The frequencies.** The exponent is $2i/d_{head}$,
        # ...: not `i / d_head`, and not the integer division `dim // d_head`"; "Compute the angles in the dtype of `x`"
        "ch13_rotary_example": (
            "rotary_halves_pairing",
            "rotary_exponent_i_over_d",
            "rotary_floor_division_exponent",
            "rotary_angles_in_float32",
        ),
        # notebook: "**The offset.** ... `apply_rotary(x_new, offset=L_past)` must turn them as the rows `L_past, ...`"
        "ch13_rotary_positions": ("rotary_offset_ignored",),
        # notebook: "Careful: `k.repeat(1, group, 1, 1)` makes `0, 1, 0, 1, ...`, the same shape and the wrong heads"
        "ch13_gqa_matches_multi_head": ("gqa_kv_heads_repeat",),
        # notebook: "The constructor raises `ValueError` with a message when ... **or** `num_kv_heads` does not divide
        # `num_heads`"
        "ch13_gqa_structure": ("gqa_no_kv_divisibility_check",),
        # notebook: "turn the **queries and the keys** with `apply_rotary` ..., **never the values**"
        "ch13_gqa_rotary": ("gqa_rotary_on_values",),
        # notebook: "**rescale it** to $m'$, multiplying **both** $\ell$ and $a$ by $e^{m - m'}$"; "$\log \ell + m$ is
        # the **log-sum-exp**"; "Without it, $e^{s}$ overflows float32 once a score passes about 88.7"
        "ch13_tiled_values": (
            "tiled_sum_not_rescaled",
            "tiled_output_not_rescaled",
            "tiled_lse_log_sum_only",
            "tiled_no_running_max",
        ),
        # notebook: "never create a tensor of `(..., L_q, L_k)` elements: not the scores, not the weights, not a causal
        # mask"
        "ch13_tiled_memory": ("tiled_scores_materialised", "tiled_causal_mask_materialised"),
    },
}


def test_lesson_warnings_name_catalogued_mistakes_of_graded_cells():
    """The table above names real cells and real catalogue files, and each file expects to fail that cell."""
    for notebook, cells in LESSON_WARNINGS.items():
        graded = set(max_points(read(source_notebook(notebook))))
        wrong = {impl.name: impl for impl in implementations(notebook, "wrong")}
        for cell, names in cells.items():
            assert cell in graded, f"{notebook}: no graded cell {cell}"
            for name in names:
                assert name in wrong, f"{notebook}/{cell}: no catalogued mistake wrong/{name}.py"
                assert cell in wrong[name].expect_fail, f"wrong/{name}.py is warned about in {cell}: expect it to fail"


@pytest.mark.parametrize("case", CELLS, ids=case_id)
def test_visible_check_catches_the_mistakes_its_lesson_warns_about(catalogues_visible_only, case, record_property):
    notebook, cell = case
    caught = sorted(
        impl.name
        for impl in implementations(notebook, "wrong")
        if cell in failed_cells(catalogues_visible_only[notebook][f"wrong-{impl.name}"])
    )
    record_property("caught_by_visible_check", ", ".join(caught))
    print(f"{notebook} {cell}: the visible check catches {len(caught)}: {', '.join(caught) or '-'}")
    missed = sorted(set(LESSON_WARNINGS.get(notebook, {}).get(cell, ())) - set(caught))
    assert not missed, (
        f"the visible check of {cell} lets through mistakes its lesson warns about: {missed}\n  it catches: {caught}"
    )
