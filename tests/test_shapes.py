"""The problem-shape corpus: what it must hold, and that every shape is one the model and the kernels take."""
import pytest

from perfmodel import KernelConfig, load_device, predict
from perfmodel.errors import UserError
from perfmodel.shapes import CLASSES, corpus, select


def test_corpus_covers_every_class_with_at_least_40_shapes():
    shapes = corpus()
    assert len(shapes) >= 40
    assert {s.cls for s in shapes} == set(CLASSES)
    assert all(len(select(c)) >= 3 for c in CLASSES)


def test_classes_hold_what_they_say():
    for s in select("small"):
        assert max(s.M, s.N, s.K) <= 768
    for s in select("skinny_m"):
        assert s.M <= 256 and min(s.N, s.K) >= 4096
    for s in select("skinny_n"):
        assert s.N <= 256 and min(s.M, s.K) >= 4096
    for s in select("large_k"):
        assert s.K >= 16 * max(s.M, s.N)
    for s in select("small_k"):
        assert s.K <= 256 and min(s.M, s.N) >= 4096
    for s in select("ragged"):  # not a multiple of any tile edge (64) in at least one dimension
        assert any(d % 64 for d in (s.M, s.N, s.K))
    for s in select("square"):
        assert s.M == s.N == s.K and s.M & (s.M - 1)  # not a power of two
    for s in select("transformer"):
        assert s.source and "[" in s.source  # cites docs/references.md


def test_a_quarter_is_held_out_in_every_class():
    hold = select("all", holdout=True)
    assert 0.2 <= len(hold) / len(corpus()) <= 0.3
    for c in CLASSES:
        assert select(c, holdout=True) and select(c, holdout=False), c


def test_every_shape_predicts_for_every_kernel():
    dev = load_device("h100-sxm")
    for s in corpus():
        for k in ("naive", "tiled_2d", "double_buffer", "warp_tiled"):
            p = predict(dev, KernelConfig.make(k), s.M, s.N, s.K)
            assert 0 < p.gflops < dev.peak_fp32_GFLOPS(), (s.name, k)


def test_unknown_class_is_a_user_error():
    with pytest.raises(UserError, match="unknown shape class 'tiny'"):
        select("tiny")
