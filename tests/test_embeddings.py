"""Positions: the paper's sinusoidal formula and its relative-position property."""

import math

import torch

from suite.models.embeddings import LearnedPositions, SinusoidalPositions, TokenEmbedding, sinusoidal_table


def test_sinusoidal_matches_formula():
    d, length = 16, 50
    table = sinusoidal_table(length, d)
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert math.isclose(table[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
            assert math.isclose(table[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


def test_relative_position_is_a_fixed_linear_map():
    # PE(pos + k) = PE(pos) @ M_k with M_k block-diagonal rotations that depend on k only.
    d, k = 32, 5
    table = sinusoidal_table(300, d, dtype=torch.float64)
    m_k = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        c, s = math.cos(w * k), math.sin(w * k)
        # [sin(w(p+k)), cos(w(p+k))] = [sin wp, cos wp] @ [[c, -s], [s, c]]
        m_k[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    positions = torch.arange(0, 300 - k - 1)
    assert torch.allclose(table[positions] @ m_k, table[positions + k], atol=1e-9)
    # A different shift needs a different map: the property is not vacuous.
    assert not torch.allclose(table[positions] @ m_k, table[positions + k + 1], atol=1e-3)


def test_sinusoidal_grows_and_offsets():
    pe = SinusoidalPositions(8, max_len=4)
    x = torch.zeros(1, 10, 8)
    assert torch.allclose(pe(x)[0], sinusoidal_table(10, 8))
    assert torch.allclose(pe(torch.zeros(1, 2, 8), offset=6)[0], sinusoidal_table(10, 8)[6:8])


def test_learned_positions_reject_long_inputs():
    pe = LearnedPositions(8, max_len=4)
    try:
        pe(torch.zeros(1, 5, 8))
    except ValueError as err:
        assert "4 learned positions" in str(err)
    else:
        raise AssertionError("expected a ValueError")


def test_token_embedding_scales_and_zeroes_padding():
    emb = TokenEmbedding(10, 16, padding_idx=0)
    out = emb(torch.tensor([[0, 3]]))
    assert torch.all(out[0, 0] == 0)
    assert torch.allclose(out[0, 1], emb.embed.weight[3] * 4.0)


def test_patch_embedding_is_the_linear_map_of_each_patch_in_row_major_order():
    from suite.models.embeddings import PatchEmbedding

    emb = PatchEmbedding(d_model=4, patch_size=2, in_channels=1)
    with torch.no_grad():  # weights = identity on the 4 pixels of a patch, so outputs are the raw patches
        emb.proj.weight.copy_(torch.eye(4).view(4, 1, 2, 2))
        emb.proj.bias.zero_()
    image = torch.arange(16.0).view(1, 1, 4, 4)
    out = emb(image)
    assert out.shape == (1, 4, 4)
    assert (
        out[0, 0].tolist() == [0, 1, 4, 5]
        and out[0, 1].tolist() == [2, 3, 6, 7]
        and out[0, 2].tolist() == [8, 9, 12, 13]
    )


def test_patch_embedding_rejects_sizes_it_cannot_tile():
    from suite.models.embeddings import PatchEmbedding

    try:
        PatchEmbedding(8, 3)(torch.zeros(1, 1, 8, 8))
    except ValueError as err:
        assert "3x3 patches" in str(err)
    else:
        raise AssertionError("expected a ValueError")
