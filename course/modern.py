"""Chapter 13's models: chapter 12's character-level language model with each change made since 2017 as a switch.

    from course import modern

    variant = modern.Variant("RoPE", positions="rotary")      # one change; Variant("2017") changes nothing
    model = modern.build(variant, modern.LADDER_RUN, vocab_size=65, seed=0)   # d_ff chosen for equal parameters
    logits = model(tokens)                                   # (batch, L, vocab)

The switches: the normalisation (`"layer"`: LayerNorm, or `"rms"`: RMSNorm), the feed-forward network (`"relu"`:
two layers with a ReLU, or `"swiglu"`: the gated network), the positions (`"learned"`: a table added to the
tokens, as in chapter 10's model; `"sinusoidal"`: chapter 06's fixed table, added likewise; `"rotary"`: queries and
keys turned by their positions, nothing added to the tokens) and the key/value heads (`kv_heads`: None for
multi-head attention, fewer than the query heads for grouped-query attention). With every switch at its 2017 value
the model computes what chapter 10's `DecoderOnlyLM` computes with the same weights (tests/test_lesson_13.py checks
it); its attention is `F.scaled_dot_product_attention`, so that every variant's time per step is measured with the
same kernel.

Equal parameters: a change that removes parameters (RMSNorm's biases, the position table, key/value heads) or
adds them (a third matrix in the gated network) would otherwise also change the model's size. `build` gives each
variant the feed-forward width whose total parameter count is nearest the 2017 model's (`matched_d_ff`).

The pieces are written for this comparison, not as the exercise asks for them: the gated network keeps its two
input matrices as one (`up`), the rotation pairs feature i with feature i + d_head / 2 (the layout of GPT-NeoX and
Llama's Hugging Face code, not the paper's adjacent pairs) from tables computed once, and grouped-query attention
is the `enable_gqa` argument of torch's attention. tools/ladder.py trains them (`make ladder`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from course.provided import sinusoidal_positional_encoding
from course.textlm import LMConfig

NORMS = ("layer", "rms")
FEED_FORWARDS = ("relu", "swiglu")
POSITIONS = ("learned", "sinusoidal", "rotary")


@dataclass(frozen=True)
class Variant:
    """Which pieces a model uses; the defaults are the 2017 ones (chapter 12's model)."""

    name: str
    norm: str = "layer"
    ffn: str = "relu"
    positions: str = "learned"
    kv_heads: int | None = None  # None: one key/value head per query head (multi-head attention)

    def __post_init__(self) -> None:
        for value, allowed in ((self.norm, NORMS), (self.ffn, FEED_FORWARDS), (self.positions, POSITIONS)):
            if value not in allowed:
                raise ValueError(f"{self.name}: {value!r} is not one of {allowed}")


BASELINE = Variant("2017 (chapter 12's model)")
# The ladder: each change alone, then all of them together (Llama's recipe, at this size).
LADDER = (
    BASELINE,
    Variant("RMSNorm", norm="rms"),
    Variant("SwiGLU", ffn="swiglu"),
    Variant("RoPE", positions="rotary"),
    Variant("GQA, 2 key/value heads", kv_heads=2),
    Variant("all four", norm="rms", ffn="swiglu", positions="rotary", kv_heads=2),
)
# Length extrapolation compares the position schemes (the learned one is the baseline's).
EXTRAPOLATION = (BASELINE, Variant("sinusoidal", positions="sinusoidal"), LADDER[3])
SEEDS = (0, 1, 2)
# Chapter 12's build model (d_model 128, 4 heads, 2 layers) trained on windows of 64 characters: half of
# chapter 12's, so that the length test can read twice as far (128) and the ladder fits in minutes.
LADDER_RUN = LMConfig(context=64, batch_size=16, steps=400, warmup=25)
RMS_EPS = 1e-5  # LayerNorm's eps in torch: the two norms then differ only in what RMSNorm drops


def rotary_angles(length: int, d_head: int, base: float = 10000.0) -> torch.Tensor:
    """(length, d_head / 2): the angle position * base ** (-2i / d_head) of every position and frequency i."""
    frequencies = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (d_head/2,)
    return torch.outer(torch.arange(length, dtype=torch.float64), frequencies)  # (length, d_head/2)


class HalvesRotation(nn.Module):
    """Turns feature pair (i, i + d_head/2) of queries or keys (batch, heads, L, d_head) at position p by the angle
    p * base ** (-2i / d_head): cos and sin tables computed once for positions 0 .. max_len - 1 (buffers, not
    parameters), each repeated for the two halves."""

    cos: torch.Tensor
    sin: torch.Tensor

    def __init__(self, d_head: int, max_len: int, base: float = 10000.0):
        super().__init__()
        angles = rotary_angles(max_len, d_head, base).float()  # (max_len, d_head/2)
        self.register_buffer("cos", torch.cat([angles.cos(), angles.cos()], dim=-1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin(), angles.sin()], dim=-1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[-2]
        first, second = x.chunk(2, dim=-1)  # (..., L, d_head/2) each: the pairs are (first[i], second[i])
        across = torch.cat([-second, first], dim=-1)  # each pair turned by a right angle
        return x * self.cos[:length] + across * self.sin[:length]


class CausalAttention(nn.Module):
    """Causal self-attention with `kv_heads` key/value heads shared by `num_heads` query heads (query head h reads
    key/value head h // (num_heads // kv_heads)). One matrix projects to the queries, keys and values at once."""

    def __init__(self, d_model: int, num_heads: int, kv_heads: int, rotation: HalvesRotation | None):
        super().__init__()
        if d_model % num_heads or num_heads % kv_heads:
            raise ValueError(f"need num_heads | d_model and kv_heads | num_heads: {d_model}, {num_heads}, {kv_heads}")
        self.num_heads, self.kv_heads, self.d_head = num_heads, kv_heads, d_model // num_heads
        self.project = nn.Linear(d_model, (num_heads + 2 * kv_heads) * self.d_head)
        self.mix = nn.Linear(d_model, d_model)
        self.rotation = rotation

    def keys_and_values(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (batch, L, d_model) -> queries (batch, num_heads, L, d_head), keys and values (batch, kv_heads, L,
        d_head): what a KV cache would store is the last two."""
        sizes = (self.num_heads * self.d_head, self.kv_heads * self.d_head, self.kv_heads * self.d_head)
        return tuple(t.unflatten(-1, (-1, self.d_head)).transpose(1, 2) for t in self.project(x).split(sizes, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.keys_and_values(x)
        if self.rotation is not None:
            q, k = self.rotation(q), self.rotation(k)  # positions enter the scores, not the values
        grouped = self.kv_heads != self.num_heads
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=grouped)  # (batch, heads, L, d_head)
        return self.mix(out.transpose(1, 2).flatten(2))  # (batch, L, d_model)


class GatedUnit(nn.Module):
    """The gated feed-forward network down(SiLU(gate) * up) with [gate, up] = up_projection(x), no biases."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.up = nn.Linear(d_model, 2 * d_ff, bias=False)  # the gate's branch and the linear one, side by side
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, linear = self.up(x).chunk(2, dim=-1)  # (..., d_ff) each
        return self.down(F.silu(gate) * linear)


def norm_layer(kind: str, d_model: int) -> nn.Module:
    return nn.LayerNorm(d_model) if kind == "layer" else nn.RMSNorm(d_model, eps=RMS_EPS)


class Block(nn.Module):
    """One pre-norm block: x + attention(norm(x)), then x + feed_forward(norm(x))."""

    def __init__(self, variant: Variant, d_model: int, num_heads: int, d_ff: int, rotation: HalvesRotation | None):
        super().__init__()
        self.norm1, self.norm2 = norm_layer(variant.norm, d_model), norm_layer(variant.norm, d_model)
        self.attention = CausalAttention(d_model, num_heads, variant.kv_heads or num_heads, rotation)
        self.feed_forward: nn.Module = (
            GatedUnit(d_model, d_ff)
            if variant.ffn == "swiglu"
            else nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.feed_forward(self.norm2(x))


class ModernLM(nn.Module):
    """Token embeddings (plus positions, unless rotary), `num_layers` Blocks, a final norm, a linear head: logits.

    `max_len` bounds the positions: the rows of a learned table, the length of a fixed or rotary table."""

    def __init__(
        self, vocab: int, variant: Variant, d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int
    ):
        super().__init__()
        self.variant, self.max_len = variant, max_len
        self.token_embed = nn.Embedding(vocab, d_model)
        self.pos_embed = nn.Embedding(max_len, d_model) if variant.positions == "learned" else None
        if variant.positions == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_positional_encoding(max_len, d_model), persistent=False)
        rotation = HalvesRotation(d_model // num_heads, max_len) if variant.positions == "rotary" else None
        self.layers = nn.ModuleList(Block(variant, d_model, num_heads, d_ff, rotation) for _ in range(num_layers))
        self.norm = norm_layer(variant.norm, d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        if length > self.max_len:
            raise ValueError(f"{length} tokens, but positions stop at max_len={self.max_len}")
        h = self.token_embed(tokens)  # (batch, L, d_model)
        if self.pos_embed is not None:
            h = h + self.pos_embed(torch.arange(length, device=tokens.device))
        elif self.variant.positions == "sinusoidal":
            h = h + self.get_buffer("pos_table")[:length]
        for block in self.layers:
            h = block(h)
        return self.head(self.norm(h))  # (batch, L, vocab)


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _model(variant: Variant, config: LMConfig, vocab_size: int, d_ff: int, max_len: int) -> ModernLM:
    return ModernLM(vocab_size, variant, config.d_model, config.num_heads, config.num_layers, d_ff, max_len)


def matched_d_ff(variant: Variant, config: LMConfig, vocab_size: int) -> int:
    """The feed-forward width that brings `variant`'s parameter count nearest the 2017 model's at config.d_ff. The
    count grows linearly with the width: two counts (on the meta device: no memory) give the line."""

    def count(kind: Variant, d_ff: int) -> int:
        with torch.device("meta"):
            return parameters(_model(kind, config, vocab_size, d_ff, config.context))

    target, at_one = count(BASELINE, config.d_ff), count(variant, 1)
    slope = count(variant, 2) - at_one
    guess = max(1, round(1 + (target - at_one) / slope))
    return min((guess - 1, guess, guess + 1), key=lambda d_ff: (abs(count(variant, d_ff) - target), d_ff))


def build(variant: Variant, config: LMConfig, vocab_size: int, seed: int, max_len: int | None = None) -> ModernLM:
    """`variant` at `config`'s size with the matched feed-forward width, its weights drawn from `seed`. Trained at
    config.context; `max_len` (default: the context) sizes the position tables."""
    d_ff = matched_d_ff(variant, config, vocab_size)
    torch.manual_seed(seed)
    return _model(variant, replace(config, seed=seed), vocab_size, d_ff, max_len or config.context)


def extend_positions(model: ModernLM, max_len: int, generator: torch.Generator) -> ModernLM:
    """Let `model` read up to `max_len` positions. Fixed tables (sinusoidal, rotary) are computed further; a learned
    table gets new rows drawn as nn.Embedding draws them (N(0, 1)): what a table longer than the training windows
    holds at the positions that training never reached."""
    if max_len <= model.max_len:
        return model
    if model.pos_embed is not None:
        old = model.pos_embed.weight.detach()
        fresh = torch.randn(max_len - old.shape[0], old.shape[1], generator=generator)
        model.pos_embed = nn.Embedding.from_pretrained(torch.cat([old, fresh]), freeze=True)
    elif model.variant.positions == "sinusoidal":
        model.register_buffer(
            "pos_table", sinusoidal_positional_encoding(max_len, model.token_embed.embedding_dim), persistent=False
        )
    else:
        blocks = [block for block in model.layers if isinstance(block, Block)]
        rotation = HalvesRotation(blocks[0].attention.d_head, max_len)
        for block in blocks:
            block.attention.rotation = rotation
    model.max_len = max_len
    return model
