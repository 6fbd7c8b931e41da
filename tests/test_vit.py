"""Our ViT (patch embedding, [CLS], learned positions, the shared encoder, a linear head) against torchvision's."""

import pytest
import torch
from torchvision.models import VisionTransformer, vit_b_16

from suite.models.classifier import Classifier, build_classifier, count_parameters
from suite.models.embeddings import PatchEmbedding
from tests.conftest import compose_config


def our_vit(preset: str, image: int, patch: int, n_classes: int, *overrides: str) -> Classifier:
    """A ViT from a model config, with the image task's patch embedding (3 channels, as torchvision's)."""
    cfg = compose_config(f"model={preset}", *overrides)
    content = PatchEmbedding(cfg.model.d_model, patch, in_channels=3)
    return build_classifier(cfg.model, content, n_classes, max_len=(image // patch) ** 2)


def load_torchvision(ours: Classifier, ref: VisionTransformer) -> None:
    """Copy torchvision's ViT weights into ours (one to one: same fused in-projection layout)."""
    with torch.no_grad():
        ours.content.proj.load_state_dict(ref.conv_proj.state_dict())
        ours.pooler.cls.copy_(ref.class_token)
        ours.positions.pos.copy_(ref.encoder.pos_embedding)
        for mine, theirs in zip(ours.backbone.layers, ref.encoder.layers):
            mine.attn_block.norm.load_state_dict(theirs.ln_1.state_dict())
            mine.self_attn.in_proj.weight.copy_(theirs.self_attention.in_proj_weight)
            mine.self_attn.in_proj.bias.copy_(theirs.self_attention.in_proj_bias)
            mine.self_attn.out_proj.load_state_dict(theirs.self_attention.out_proj.state_dict())
            mine.ff_block.norm.load_state_dict(theirs.ln_2.state_dict())
            mine.ff.linear1.load_state_dict(theirs.mlp[0].state_dict())
            mine.ff.linear2.load_state_dict(theirs.mlp[3].state_dict())
        ours.backbone.norm.load_state_dict(ref.encoder.ln.state_dict())
        ours.head.net[-1].load_state_dict(ref.heads.head.state_dict())


@pytest.mark.parametrize("train_mode", [False, True], ids=["eval", "train"])
def test_vit_matches_torchvision_given_the_same_weights(train_mode):
    d, layers, heads, mlp, image, patch, classes = 32, 2, 4, 64, 8, 2, 5
    ref = VisionTransformer(
        image_size=image,
        patch_size=patch,
        num_layers=layers,
        num_heads=heads,
        hidden_dim=d,
        mlp_dim=mlp,
        num_classes=classes,
    )
    with torch.no_grad():  # torchvision zero-initialises the head and [CLS]: perturb everything, so every copy counts
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = our_vit(
        "vit",
        image,
        patch,
        classes,
        f"model.d_model={d}",
        f"model.backbone.n_layers={layers}",
        f"model.backbone.n_heads={heads}",
        f"model.backbone.d_ff={mlp}",
        "model.backbone.dropout=0.0",
    )
    assert count_parameters(ours) == count_parameters(ref)
    load_torchvision(ours, ref)
    ours.train(train_mode), ref.train(train_mode)
    x = torch.randn(3, 3, image, image)
    with torch.no_grad():
        expected, got = ref(x), ours(x)
    assert got.shape == (3, classes)
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


@pytest.mark.parametrize(
    "preset, dims",
    [("vit_tiny", (12, 192, 768, 3)), ("vit_small", (12, 384, 1536, 6)), ("vit_base", (12, 768, 3072, 12))],
)
def test_vit_presets_have_their_dimensions_and_the_vit_recipe(preset, dims):
    cfg = compose_config(f"model={preset}").model
    bb = cfg.backbone
    assert (bb.n_layers, cfg.d_model, bb.d_ff, bb.n_heads) == dims
    assert bb.norm_first and bb.activation == "gelu" and bb.layer_norm_eps == 1e-6
    assert cfg.positions._target_.endswith("LearnedPositions") and cfg.pooling._target_.endswith("ClsPooling")


def test_vit_base_has_the_papers_86m_parameters():
    # Counted at ViT-B/16's ImageNet size: 224 px, 16 px patches, 1000 classes; on the meta device (no memory).
    with torch.device("meta"):
        ours = our_vit("vit_base", 224, 16, 1000)
        reference = vit_b_16()
    n = count_parameters(ours)
    assert abs(n - 86e6) / 86e6 < 0.01
    assert n == count_parameters(reference) == 86_567_656


def test_image_transformer_is_the_vit():
    # conf/adapt/image_transformer.yaml: on images, model=transformer composes as model=vit.
    from omegaconf import OmegaConf

    from tests.conftest import compose_config

    as_transformer = compose_config("task=image", "model=transformer").model
    as_vit = compose_config("task=image", "model=vit").model
    plain = lambda model: {
        k: v
        for k, v in OmegaConf.to_container(model, resolve=True).items()
        if k in ("d_model", "d_ff", "embed_dropout", "positions", "pooling", "head", "backbone")
    }  # noqa: E731
    assert plain(as_transformer) == plain(as_vit) and len(plain(as_vit)) == 7
    assert compose_config("task=sentiment", "model=transformer").model.positions._target_.endswith(
        "SinusoidalPositions"
    )
