"""Efficient attention variants: each proven against an exact limit or its explicit form, not just run.

Every config in conf/model/attention/ is covered automatically: padding invariance, no future
leakage where causal, a smoke step inside a Transformer classifier built by Hydra composition.
"""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from suite.attention import FullAttention
from suite.attention.catalog import build
from suite.attention.core import CACHE, CAUSAL
from suite.attention.linear import elu_feature
from suite.attention.reformer import SELF_SCORE
from suite.models.seq2seq import build_seq2seq
from suite.models.transformer import Decoder, Encoder
from suite.run import execute
from tests.conftest import CONF, compose_config, shrink

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = sorted(p.stem for p in (CONF / "model" / "attention").glob("*.yaml"))
B, H, L, D = 2, 2, 13, 8
# Settings that make the sparse paths real at L = 13 (several blocks, chunks, buckets).
SMALL = {
    "local": {"window": 2},
    "longformer": {"window": 2, "n_global": 2},
    "bigbird": {"block": 3, "window": 1, "n_global": 1, "n_random": 1},
    "linear": {"chunk": 4},
    "performer": {"n_features": 32, "chunk": 4},
    "reformer": {"n_buckets": 4, "n_rounds": 2, "chunk": 4},
    "linformer": {"proj_len": 6},
    "nystrom": {"n_landmarks": 4},
}


SPARSE = ("local", "longformer", "bigbird")  # their default sizes (64) reach every key of L positions: refused


def make_core(name: str, max_len: int | None = L, **settings):
    """The core as the layer builds it, at this file's sizes (H heads of width D); the sparse variants at this
    file's ``SMALL`` sizes unless told. ``max_len=None``: a core built without a length (it clips, refusing nothing)."""
    defaults = SMALL[name] if name in SPARSE else {}
    return build(name, max_len, small=False, heads=H, head_dim=D, **(defaults | settings))


def qkv(length: int = L):
    return tuple(torch.randn(B, H, length, D) for _ in range(3))


def padding(length: int = L) -> torch.Tensor:
    pad = torch.zeros(B, length, dtype=torch.bool)
    pad[1, length - 4 :] = True
    return pad


def masked_reference(q, k, v, allowed=None, pad=None, self_score=None):
    """Softmax attention written out, with an (L, L) allowed pattern and key padding."""
    scores = q @ k.transpose(-2, -1) / D**0.5
    if self_score is not None:
        scores = scores.masked_fill(torch.eye(q.size(2), dtype=torch.bool), self_score)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    if pad is not None:
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
    return scores.softmax(-1) @ v


def close_on_real(out, ref, pad, atol=1e-5):
    """Equal at every real query position (padded queries' outputs are never read)."""
    real = ~pad[:, None, :, None].expand_as(out)
    return torch.allclose(out[real], ref[real], atol=atol)


def refused(match: str):
    """A build-time refusal: the core's ValueError, as it is or as Hydra wraps it (message kept)."""
    return pytest.raises((ValueError, InstantiationException), match=match)


def test_every_config_has_its_module_and_every_module_its_config():
    modules = {p.stem for p in (ROOT / "suite" / "attention").glob("*.py")} - {
        "__init__",
        "core",
        "catalog",
    }  # catalog builds them
    assert set(VARIANTS) == modules
    for name in VARIANTS:
        assert instantiate(OmegaConf.load(CONF / "model" / "attention" / f"{name}.yaml")).func.name == name


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window", [L, L + 5])
def test_local_built_without_a_length_clips_a_window_of_the_length_or_more_to_full_attention(window, causal):
    q, k, v = qkv()
    pad = padding()
    out = make_core("local", max_len=None, window=window)(q, k, v, pad, causal)
    full = FullAttention()(q, k, v, pad_mask=pad, causal=causal)
    assert close_on_real(out, full, pad)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window", [1, 2, 5])
def test_local_equals_the_masked_explicit_form(window, causal):
    q, k, v = qkv()
    pad = padding()
    i = torch.arange(L)
    dist = i[:, None] - i[None]
    allowed = (dist.abs() <= window) & ((dist >= 0) if causal else True)
    out = make_core("local", window=window)(q, k, v, pad, causal)
    assert close_on_real(out, masked_reference(q, k, v, allowed, pad), pad)


@pytest.mark.parametrize("window,n_global", [(1, 1), (2, 3), (3, 0), (L, 2)])
def test_longformer_equals_window_plus_global_rows_and_columns(window, n_global):
    q, k, v = qkv()
    pad = padding()
    i = torch.arange(L)
    allowed = ((i[:, None] - i[None]).abs() <= window) | (i[:, None] < n_global) | (i[None] < n_global)
    out = make_core("longformer", max_len=None, window=window, n_global=n_global)(q, k, v, pad)
    assert close_on_real(out, masked_reference(q, k, v, allowed, pad), pad)


def test_bigbird_with_every_block_selected_is_full_attention():
    q, k, v = qkv()
    pad = padding()
    for settings in (
        {"block": 3, "window": 5, "n_global": 0, "n_random": 0},
        {"block": 3, "window": 0, "n_global": 1, "n_random": 5},
    ):
        core = make_core("bigbird", max_len=None, **settings)
        assert core.block_pattern(5).all()
        assert close_on_real(core(q, k, v, pad), FullAttention()(q, k, v, pad_mask=pad), pad)


def test_bigbird_gathers_exactly_its_block_pattern_fixed_for_the_run():
    q, k, v = qkv(23)
    pad = padding(23)
    core = make_core("bigbird", max_len=23, block=3, window=1, n_global=1, n_random=2)
    pattern = core.block_pattern(8)  # 23 positions in blocks of 3
    assert pattern[0].all() and pattern[:, 0].all()  # the global block reads and is read by all
    assert torch.equal(pattern[1:].sum(1), torch.tensor([5, 6, 6, 6, 6, 6, 5]))  # window (2-3) + global + 2 random
    assert torch.equal(pattern, core.block_pattern(8))  # fixed for the run
    blocks = torch.arange(23) // 3
    allowed = pattern[blocks[:, None], blocks[None]]
    assert close_on_real(core(q, k, v, pad), masked_reference(q, k, v, allowed, pad), pad)
    other = make_core("bigbird", max_len=23, block=3, window=1, n_global=1, n_random=2)
    assert int(other.seed) != int(core.seed)  # each layer draws its own pattern


@pytest.mark.parametrize("chunk", [L, 7, 20])  # one chunk, or two that see each other
@pytest.mark.parametrize("n_rounds", [1, 3])
def test_reformer_with_one_bucket_is_full_shared_qk_attention(chunk, n_rounds):
    # Shared QK: keys are the normalised queries; a position's own key scores SELF_SCORE, so it
    # attends to itself only when nothing else is in reach (the paper's rule).
    q, k, v = qkv()
    pad = padding()
    out = make_core("reformer", n_buckets=1, n_rounds=n_rounds, chunk=chunk)(q, k, v, pad)
    ref = masked_reference(q, F.normalize(q, dim=-1), v, pad=pad, self_score=SELF_SCORE)
    assert close_on_real(out, ref, pad)


def test_linformer_with_identity_projections_is_full_attention():
    q, k, v = qkv()
    core = make_core("linformer", proj_len=L)
    with torch.no_grad():
        core.e.copy_(torch.eye(L))
        core.f.copy_(torch.eye(L))
    assert torch.allclose(core(q, k, v), FullAttention()(q, k, v), atol=1e-5)


@pytest.mark.parametrize("n_landmarks", [L, L + 7])
def test_nystrom_with_a_landmark_per_position_is_full_attention(n_landmarks):
    # Every position its own landmark: F1 = A = F2 = the softmax matrix S, and S pinv(S) S V = S V.
    q, k, v = (0.5 * x for x in qkv())
    full = FullAttention()(q, k, v)
    exact = make_core("nystrom", n_landmarks=n_landmarks, pinv_iterations=0)(q, k, v)
    iterated = make_core("nystrom", n_landmarks=n_landmarks, pinv_iterations=20)(q, k, v)
    assert torch.allclose(exact, full, atol=1e-4) and torch.allclose(iterated, full, atol=1e-4)


@pytest.mark.parametrize("chunk", [1, 4, 64])
def test_linear_equals_its_explicit_formula_and_causal_prefix_sums_the_masked_form(chunk):
    q, k, v = qkv()
    core = make_core("linear", chunk=chunk)
    scores = elu_feature(q) @ elu_feature(k).transpose(-2, -1)  # (B, H, L, L): phi(q_i) . phi(k_j)
    explicit = scores @ v / scores.sum(-1, keepdim=True)
    masked = scores.tril() @ v / scores.tril().sum(-1, keepdim=True)
    assert torch.allclose(core(q, k, v), explicit, atol=1e-5)
    assert torch.allclose(core(q, k, v, causal=True), masked, atol=1e-5)
    assert torch.allclose(
        core(q[:, :, -3:], k, v, causal=True), masked[:, :, -3:], atol=1e-5
    )  # last queries, as with a cache


def test_linear_cached_steps_with_a_constant_state_equal_the_causal_pass():
    q, k, v = qkv()
    core = make_core("linear")
    full = core(q, k, v, causal=True)
    state, sizes = {}, set()
    for t in range(L):
        out, state = core.decode_step(q[:, :, t : t + 1], k[:, :, t : t + 1], v[:, :, t : t + 1], state)
        sizes.add(tuple(s.numel() for s in state.values()))
        assert torch.allclose(out[:, :, 0], full[:, :, t], atol=1e-5)
    assert len(sizes) == 1  # the state does not grow with the prefix


STEPPING = [
    n for n in VARIANTS if CACHE in make_core(n).capabilities or n == "local"
]  # local keeps its window instead of a cache


@pytest.mark.parametrize("name", STEPPING)
def test_decode_step_in_chunks_equals_the_causal_pass(name):
    # Generation reads a prompt in one step and then a position at a time; the core keeps its own state.
    q, k, v = qkv()
    core = make_core(name)
    full = core(q, k, v, causal=True)
    outs, state, start = [], {}, 0
    for size in (5, 1, 1, 3, 1, 2):
        out, state = core.decode_step(*(x[:, :, start : start + size] for x in (q, k, v)), state)
        outs.append(out)
        start += size
    assert start == L and torch.allclose(torch.cat(outs, dim=2), full, atol=1e-5)


def test_decoding_state_sizes_cache_grows_sums_constant_window_bounded():
    def sizes(core):
        state, seen = {}, []
        for t in range(L):
            _, state = core.decode_step(*(x[:, :, t : t + 1] for x in qkv()), state)
            seen.append(sum(s.numel() for s in state.values()))
        return seen

    full, linear, local = sizes(make_core("full")), sizes(make_core("linear")), sizes(make_core("local", window=2))
    assert full == [full[0] * (t + 1) for t in range(L)]
    assert len(set(linear)) == 1 and local[1:] == [local[1]] * (L - 1) and local[1] == 2 * local[0]


def test_performer_decodes_with_sums_of_a_fixed_size_rescaled_when_a_larger_key_arrives():
    torch.manual_seed(0)
    core = make_core("performer", n_features=16)
    q, k, v = qkv()
    # keys of large norm first: their exponents are low (-|x'|^2 / 2 dominates), so each later key raises the running
    # peak and the sums kept so far must be rescaled to it
    k = k * torch.linspace(6.0, 0.5, L)[None, None, :, None]
    outs, state, seen = [], {}, set()
    for t in range(L):
        out, state = core.decode_step(*(x[:, :, t : t + 1] for x in (q, k, v)), state)
        outs.append(out)
        seen.add(sum(s.numel() for s in state.values()))
    assert seen == {B * core.state_size(L)}  # H x (m x (Dh + 1) + 1) a sequence, from the first position to the last
    w = core.features.double()
    phi = lambda x: torch.exp((x := x.double() * D**-0.25) @ w.t() - x.pow(2).sum(-1, keepdim=True) / 2)  # noqa: E731
    scores = (phi(q) @ phi(k).transpose(-2, -1)).tril()  # (B, H, L, L), no stabiliser, in float64
    assert torch.allclose(torch.cat(outs, 2).double(), scores @ v.double() / scores.sum(-1, keepdim=True), atol=1e-5)


def test_a_core_without_a_decoding_state_is_named():
    with pytest.raises(ValueError, match="'bigbird' cannot serve the step-by-step decoding"):
        make_core("bigbird").decode_step(*qkv(), {})


def test_performer_error_against_softmax_falls_as_features_grow():
    q, k, v = (0.5 * torch.randn(B, H, 32, D) for _ in range(3))
    pad = padding(32)
    full = FullAttention()(q, k, v, pad_mask=pad)

    def error(m: int) -> float:
        errors = []
        for seed in range(4):
            torch.manual_seed(seed)
            out = make_core("performer", max_len=32, n_features=m)(q, k, v, pad)
            errors.append((out - full)[~pad[:, None, :, None].expand_as(out)].pow(2).mean().sqrt().item())
        return sum(errors) / len(errors)

    errors = [error(m) for m in (16, 64, 256, 1024)]
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 0.02


def test_favor_features_are_the_explicit_formula_up_to_the_stabiliser_and_zero_where_padded():
    from suite.attention.performer import favor_features, orthogonal_features

    torch.manual_seed(0)
    w, x = orthogonal_features(64, D), torch.randn(B, H, 12, D, requires_grad=True)
    pad = padding(12)
    scaled = x * D**-0.25
    explicit = torch.exp(scaled @ w.t() - scaled.pow(2).sum(-1, keepdim=True) / 2) / 64**0.5  # phi(x), no stabiliser
    keys, queries = favor_features(x, w, False, pad), favor_features(x, w, True)
    real = ~pad[:, None, :, None].expand_as(keys)
    for b in range(B):  # keys: one factor per head (it cancels in numerator and normaliser); queries: one per row
        for h in range(H):
            ratio = (keys[b, h] / explicit[b, h])[real[b, h]]
            torch.testing.assert_close(ratio, ratio[0].expand_as(ratio), rtol=1e-4, atol=0)
    ratio = queries / explicit
    torch.testing.assert_close(ratio, ratio[..., :1].expand_as(ratio), rtol=1e-4, atol=0)
    assert (
        keys.detach().amax() <= 1 / 64**0.5 + 1e-6 and (keys[~real] == 0).all()
    )  # stabilised; padded keys give nothing
    (grad,) = torch.autograd.grad(keys.sum() + queries.sum(), x)
    assert (
        torch.isfinite(grad).all() and (grad[pad[:, None, :, None].expand_as(grad)] != 0).any()
    )  # padded rows still get the queries' gradient


def test_performer_redraws_features_on_its_schedule():
    never, every = make_core("performer", redraw_every=0).train(), make_core("performer", redraw_every=2).train()
    q, k, v = qkv()
    drawn = [(never.features.clone(), every.features.clone())]
    for _ in range(3):
        never(q, k, v), every(q, k, v)
        drawn.append((never.features.clone(), every.features.clone()))
    assert all(torch.equal(a, drawn[0][0]) for a, _ in drawn)
    assert torch.equal(drawn[1][1], drawn[0][1]) and torch.equal(drawn[2][1], drawn[1][1])
    assert not torch.equal(drawn[3][1], drawn[2][1])  # the third pass starts a new draw


@pytest.mark.parametrize("name", VARIANTS)
def test_every_variant_is_padding_invariant(name):
    core = make_core(name, **SMALL.get(name, {}))
    q, k, v = qkv()
    pad = padding()
    changed = [x.clone() for x in (q, k, v)]
    for x in changed:
        x[pad[:, None, :, None].expand_as(x)] = 100.0 * torch.randn(int(pad.sum()) * H * D)
    with torch.no_grad():
        a, b = core(q, k, v, pad), core(*changed, pad)
    assert a.shape == (B, H, L, D) and torch.isfinite(b).all()
    assert close_on_real(a, b, pad, atol=1e-5)


@pytest.mark.parametrize("name", [n for n in VARIANTS if CAUSAL in make_core(n).capabilities])
def test_causal_variants_leak_nothing_from_the_future(name):
    core = make_core(name, **SMALL.get(name, {}))
    q, k, v = (x.requires_grad_() for x in qkv())
    out = core(q, k, v, causal=True)
    for i in (0, 5, L - 2):
        grads = torch.autograd.grad(out[:, :, i].sum(), (q, k, v), retain_graph=True)
        for g in grads:
            assert torch.all(g[:, :, i + 1 :] == 0), (name, i)
        assert grads[1][:, :, : i + 1].abs().sum() > 0 or grads[2][:, :, : i + 1].abs().sum() > 0


@pytest.mark.parametrize("name", [n for n in VARIANTS if CACHE in make_core(n).capabilities])
def test_cached_decoding_equals_the_full_pass_for_cache_capable_variants(name):
    cfg = shrink(compose_config("model=transformer", f"model/attention={name}"))
    net = build_seq2seq(cfg.model, 50, 50, max_len=32, shared_vocab=True).eval()
    src, src_mask = torch.randint(4, 50, (2, 7)), padding(7)
    tgt = torch.randint(4, 50, (2, 6))
    with torch.no_grad():
        memory = net.encode(src, src_mask)
        full = net.decode(tgt, memory, src_mask)
        state = net.start(memory, src_mask)
        for t in range(tgt.size(1)):
            logits, state = net.step(tgt[:, t : t + 1], t, state)
            assert torch.allclose(logits, full[:, t], atol=1e-4), (name, t)


@pytest.mark.parametrize("name", VARIANTS)
def test_every_variant_trains_a_tiny_classifier_through_hydra(name, tmp_path):
    settings = [f"model.attention.{key}={value}" for key, value in SMALL.get(name, {}).items()]
    cfg = shrink(
        compose_config(
            "task=long_range",
            "model=transformer",
            f"model/attention={name}",
            "task.seq_len=24",
            "task.n_train=64",
            "task.n_val=16",
            "task.n_test=16",
            *settings,
        )
    )
    record = execute(cfg, tmp_path, attention=name)
    assert record.status == "ok", record.error
    assert record.attention == name and record.steps > 0


@pytest.mark.parametrize("window", [0, -3, 2.5, "8", True, None])
def test_a_window_that_is_not_a_positive_int_is_refused_at_build(window):
    for name in ("local", "longformer"):
        with pytest.raises(ValueError, match=rf"'{name}': window must be a positive integer"):
            make_core(name, window=window)


@pytest.mark.parametrize(
    "name,settings,most",
    [
        ("local", {"window": L - 1}, "a window of at most 11"),
        ("local", {"window": 64}, "a window of at most 11"),
        ("longformer", {"window": L, "n_global": 1}, "a window of at most 11"),
        ("bigbird", {"block": 64}, "a longer task or a smaller block and window"),
        ("bigbird", {"block": 3, "window": 1, "n_global": 1, "n_random": 2}, "a longer task"),  # 5 blocks: 3 + 1 + 2
    ],
)
def test_a_sparse_pattern_reaching_every_key_of_the_length_is_refused_at_build(name, settings, most):
    with pytest.raises(
        ValueError,
        match=rf"'{name}': at its .* every query reaches every key of the longest sequence "
        rf"\({L} positions\).*full attention.*{most}",
    ):
        make_core(name, **settings)


def test_a_sparse_pattern_one_key_short_of_everything_builds():
    make_core("local", window=L - 2)
    make_core("longformer", window=L - 2, n_global=1)
    make_core("bigbird", block=3, window=1, n_global=1, n_random=1)  # 5 blocks: the 5th is out of reach of block 1


def test_a_variant_lacking_a_capability_is_refused_by_the_layer_that_needs_it():
    for name in ("reformer", "local", "linformer", "bigbird", "longformer", "nystrom"):
        cfg = compose_config("model=transformer", f"model/attention={name}", "++model.decoder.max_len=1024")
        with refused(rf"attention variant '{name}' cannot serve the decoder's .*lacks"):
            instantiate(cfg.model.decoder)
    cfg = compose_config("model=transformer", "model/attention=reformer", "++model.decoder.max_len=1024")
    with refused("'reformer' cannot serve the decoder's self-attention: it lacks cached decoding, causal"):
        instantiate(cfg.model.decoder)
    instantiate(compose_config("model=transformer", "model/attention=reformer").model.backbone)  # encoders take it


def test_linformer_needs_its_length_at_build_and_refuses_a_longer_sequence():
    cfg = compose_config("model=transformer", "model/attention=linformer")
    with refused("'linformer' needs a fixed max_len"):
        instantiate(cfg.model.backbone)  # max_len not filled in
    encoder = Encoder(32, 1, 4, 64, attention=instantiate(cfg.model.attention), max_len=16)
    encoder(torch.randn(2, 16, 32))
    with pytest.raises(ValueError, match="'linformer' was built for max_len=16, got a sequence of 20"):
        encoder(torch.randn(2, 20, 32))


def integer_settings(name: str) -> dict[str, int]:
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / "model" / "attention" / f"{name}.yaml"))
    return {k: v for k, v in cfg.items() if isinstance(v, int) and not isinstance(v, bool)}


@pytest.mark.parametrize("name", [n for n in VARIANTS if integer_settings(n)])
def test_every_integer_setting_of_every_variant_refuses_a_negative_or_fractional_value_at_build(name):
    for key in integer_settings(name):
        for bad in (-1, 2.5, "4"):
            with pytest.raises(
                ValueError, match=rf"'{name}': {key} must be a (positive|non-negative) integer, got {bad!r}"
            ):
                make_core(name, **{key: bad})


def test_linformer_weights_trained_for_one_length_are_refused_at_another_before_any_step(tmp_path):
    common = [
        "task=long_range",
        "model=transformer",
        "model/attention=linformer",
        "model.attention.proj_len=8",
        "task.n_train=32",
        "task.n_val=8",
        "task.n_test=8",
    ]
    trained = execute(shrink(compose_config(*common, "task.seq_len=16")), tmp_path / "train", attention="linformer")
    assert trained.status == "ok", trained.error
    longer = execute(
        shrink(
            compose_config(
                *common,
                "task.seq_len=32",
                "job=evaluate",
                f"job.checkpoint={tmp_path / 'train' / 'checkpoints' / 'best.pt'}",
            )
        ),
        tmp_path / "eval",
    )
    assert (
        longer.status == "failed"
        and "'linformer' was trained for max_len=17 and is built here for max_len=33" in longer.error
    )  # [CLS] + 16, + 32


def test_a_causal_request_to_an_encoder_only_variant_is_an_error():
    q, k, v = qkv()
    for name in ("longformer", "bigbird", "reformer", "linformer", "nystrom"):
        with pytest.raises(ValueError, match=f"'{name}' has no causal mode"):
            make_core(name)(q, k, v, causal=True)


def test_full_and_explicit_declare_every_capability_and_build_decoders():
    for name in ("full", "explicit"):
        decoder = Decoder(
            32, 1, 4, 64, attention=instantiate(OmegaConf.load(CONF / "model" / "attention" / f"{name}.yaml"))
        )
        assert decoder.layers[0].self_attn.core.capabilities == {
            "padding mask",
            "causal",
            "cross-attention",
            "cached decoding",
        }


@pytest.mark.parametrize("causal", [False, True])
def test_local_attention_in_forced_bf16_is_its_fp32_result_to_bf16_precision(causal):
    """The fused SDPA path under bf16 autocast, forced, so every CPU kind runs it (AMX picks it under auto)."""
    from suite.attention.local import LocalAttention
    from suite.runtime import numerics

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 37, 8, generator=gen) for _ in range(3))
    pad = torch.zeros(2, 37, dtype=torch.bool)
    pad[1, 30:] = True
    core = LocalAttention(window=5, n_heads=2, head_dim=8)
    exact = core(q, k, v, pad, causal)
    with numerics.autocast("bf16", torch.device("cpu")):
        low = core(q, k, v, pad, causal)
    assert low.dtype == torch.bfloat16 and torch.isfinite(low).all()
    real = ~pad  # (B, L): compare the real queries, (B, H, L, Dh) -> (B, L, H, Dh) rows
    torch.testing.assert_close(low.float().transpose(1, 2)[real], exact.transpose(1, 2)[real], atol=3e-2, rtol=3e-2)
