r"""One LightGBM tree evaluated on fixed rows, bit-identical to ``Booster.predict`` and several times cheaper.

A boosting round adds one tree h_k to the training scores, f_{k+1} = f_k + h_k(X). ``Booster.predict`` of that one
tree on dense rows costs about as much as predicting the whole model (per row, LightGBM first turns the dense row
into a sparse one: ~0.3 µs per row and call on Adult's 108 encoded columns, against ~30 ns per row and tree), so a
solve that re-predicts every round spends most of its time there. :class:`TreeScorer` copies the rows once, with
LightGBM's zero rule (a value v with |v| ≤ 10⁻³⁵, ``kZeroThreshold``, is 0: its predictor drops it from the
sparse row; NaN stays NaN), and then per tree:

* rows of at most :data:`MAX_LIGHTGBM_NONZEROS` non-zeros on average: ``Booster.predict`` of the tree, on the rows
  as a CSR matrix when they are mostly zero (density ≤ :data:`SPARSE_DENSITY`, e.g. one-hot encoded tables: LightGBM
  reads the same (feature, value) pairs from it as from the dense rows, so the same prediction, at a cost per row
  of its non-zeros rather than of its columns), else as they are;
* wider rows: the tree read from LightGBM's text model (``model_to_string(start_iteration=k, num_iteration=1)``:
  thresholds and leaf values printed with 17 significant digits, so read back exactly) and the rows routed through
  it with numpy, one vectorised step per internal node on the rows that reach it, with LightGBM's own decision rule
  (``Tree::NumericalDecision``): missing type ``None``: NaN is read as 0; ``Zero``: v = 0 (or NaN) goes the node's
  default side; ``NaN``: NaN goes the default side; otherwise left iff v ≤ threshold (in float64, as LightGBM
  compares). A tree with a categorical split or a linear tree (never grown by the gbdt model, which hands LightGBM
  numeric columns only) is predicted by LightGBM instead.

The leaf value of each row is returned (float64). ``Booster.predict`` sums its trees from 0 in order, so scores
accumulated round by round from zeros with these values are the model's raw scores bit for bit.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

ZERO_THRESHOLD = 1e-35  # LightGBM's kZeroThreshold
SPARSE_DENSITY = 0.25  # rows with at most this share of non-zeros are predicted by LightGBM as a CSR matrix
#: beyond this many non-zeros per row (on average), reading the rows costs LightGBM more than routing them with numpy
#: (CPU per tree of ``TreeScorer`` with each path forced; figures in docs/architecture.md, "Measured choices")
MAX_LIGHTGBM_NONZEROS = 10
#: rows × columns beyond which nothing is copied (:class:`KeptScores`, :class:`TreeScorer`): each tree is predicted
#: by LightGBM on the rows as they are, as without this module, so a large table costs no second copy of X
MAX_COPIED_VALUES = 1 << 24
MISSING_NONE, MISSING_ZERO, MISSING_NAN = 0, 1, 2
_DEFAULT_LEFT, _CATEGORICAL = 2, 1


@dataclass(frozen=True)
class Tree:
    """One tree of the text model: internal node i splits ``feature[i]`` at ``threshold[i]``; a child ≥ 0 is an
    internal node, a child c < 0 the leaf ~c; ``decision`` is LightGBM's decision_type byte."""

    leaf_value: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    decision: np.ndarray
    left: np.ndarray
    right: np.ndarray
    numeric: bool  # no categorical split and not a linear tree


def parse_tree(text: str) -> Tree:
    """The first ``Tree=`` block of a LightGBM text model."""
    fields: dict[str, str] = {}
    for line in text[text.index("Tree="):].splitlines()[1:]:
        if not line or line.startswith("Tree=") or line.startswith("end of trees"):
            break
        key, _, value = line.partition("=")
        fields[key] = value

    def array(key: str, dtype) -> np.ndarray:
        return np.array(fields[key].split(), dtype=dtype) if fields.get(key) else np.zeros(0, dtype=dtype)

    decision = array("decision_type", np.int64)
    numeric = int(fields.get("num_cat", "0")) == 0 and fields.get("is_linear", "0") == "0" \
        and not np.any(decision & _CATEGORICAL)
    return Tree(array("leaf_value", np.float64), array("split_feature", np.int64), array("threshold", np.float64),
                decision, array("left_child", np.int64), array("right_child", np.int64), numeric)


class TreeScorer:
    """The values of single trees of a booster on fixed rows ``X`` (n, d), as ``Booster.predict`` gives them.

    ``lightgbm_rows``: the rows LightGBM predicts (a CSR copy with LightGBM's zero rule applied when mostly zero, else
    ``X``), or None when numpy routes them: ``columns``, a column-major float64 copy with the zero rule applied,
    so each node reads one contiguous column."""

    def __init__(self, X: np.ndarray, num_threads: int = 1) -> None:
        from scipy.sparse import csr_matrix

        X = np.asarray(X)
        self.X, self.num_threads, self.lightgbm_rows, self.columns, self.has_nan = X, num_threads, X, None, False
        if X.size > MAX_COPIED_VALUES:  # LightGBM on the rows as they are
            return
        nonzero = X != 0  # NaN included
        count = np.count_nonzero(nonzero)
        if count <= SPARSE_DENSITY * X.size:
            rows, cols = np.nonzero(nonzero)  # row-major: each row's columns ascending
            values = X[rows, cols].astype(np.float64)
            kept = ~(np.abs(values) <= ZERO_THRESHOLD)
            rows, cols, values = rows[kept], cols[kept], values[kept]
            indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
            self.lightgbm_rows = csr_matrix((values, cols, indptr), shape=X.shape)
        elif count > MAX_LIGHTGBM_NONZEROS * X.shape[0]:
            columns = np.array(X.T, dtype=np.float64).T  # a column-major copy
            np.copyto(columns, 0.0, where=np.abs(columns) <= ZERO_THRESHOLD)
            self.lightgbm_rows, self.columns, self.has_nan = None, columns, bool(np.isnan(columns).any())

    def tree_values(self, booster, iteration: int) -> np.ndarray:
        """h(X) (n,) float64 of the booster's tree ``iteration`` (0-based)."""
        if self.lightgbm_rows is None:
            tree = parse_tree(booster.model_to_string(start_iteration=iteration, num_iteration=1))
            if tree.numeric:
                return self.values(tree)
        return np.asarray(booster.predict(self.X if self.lightgbm_rows is None else self.lightgbm_rows,
                                          start_iteration=iteration, num_iteration=1, raw_score=True,
                                          num_threads=self.num_threads), dtype=np.float64)

    def values(self, tree: Tree) -> np.ndarray:
        """The leaf value each row reaches in ``tree`` (dense rows)."""
        n = self.columns.shape[0]
        if tree.feature.size == 0:  # a single leaf
            return np.full(n, tree.leaf_value[0] if tree.leaf_value.size else 0.0)
        out = np.empty(n)
        pending = [(0, np.arange(n))]
        while pending:
            node, rows = pending.pop()
            if node < 0:
                out[rows] = tree.leaf_value[~node]
                continue
            left = self._goes_left(tree, node, self.columns[:, tree.feature[node]][rows])
            pending.append((int(tree.left[node]), rows[left]))
            pending.append((int(tree.right[node]), rows[~left]))
        return out

    def _goes_left(self, tree: Tree, node: int, value: np.ndarray) -> np.ndarray:
        """``Tree::NumericalDecision`` of one node on the rows' values."""
        decision = int(tree.decision[node])
        missing = (decision >> 2) & 3
        left = value <= tree.threshold[node]
        if not self.has_nan and missing != MISSING_ZERO:
            return left
        nan = np.isnan(value)
        if missing == MISSING_NAN:
            is_missing = nan
        elif missing == MISSING_ZERO:
            is_missing = (value == 0.0) | nan  # NaN is read as 0 first
        else:  # None: NaN is read as 0
            return np.where(nan, 0.0 <= tree.threshold[node], left)
        return np.where(is_missing, bool(decision & _DEFAULT_LEFT), left)


#: a catch-up of more trees than this predicts the whole model with LightGBM instead (one pass over the rows)
CATCH_UP_TREES = 32


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two C-contiguous arrays of one float dtype and shape hold the same bits: one pass of an integer
    comparison (a NaN equals its own copy), not ``np.array_equal(..., equal_nan=True)``'s float comparison plus two
    NaN masks (Adult's 12,000 × 108 float32 training rows: 0.14 against 1.66 ms, read at every forward pass over
    them)."""
    view = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(a.view(view), b.view(view)))


class KeptScores:
    """The raw scores f(X) (n,) float64 of a growing booster on fixed rows ``X``, kept up to date: each call of
    :meth:`catch_up` adds the trees grown since the last one (:class:`TreeScorer`), or — for more than
    :data:`CATCH_UP_TREES` of them — predicts the whole model; either way ``Booster.predict(X, raw_score=True)``
    bit for bit (LightGBM sums its trees from 0 in order, and so do the added trees). Only appended trees are
    followed: a booster whose earlier trees change in place needs a new instance.

    The rows are copied when the instance is made (``rows``): everything is computed from that copy, and
    :meth:`span_in` finds them in a later array only where that array holds the same values. Rows of more than
    :data:`MAX_COPIED_VALUES` values are not copied: the scores are computed from ``X`` itself (which must then stay
    unchanged, as a solve's rows do) and :meth:`span_in` finds them nowhere."""

    def __init__(self, X: np.ndarray, num_threads: int = 1) -> None:
        self.source = X  # where the rows were read from (their place in memory: :meth:`span_in`)
        self.copied = X.size <= MAX_COPIED_VALUES
        self.rows = np.array(X, copy=True) if self.copied else X
        self.num_threads = num_threads
        self.scorer: TreeScorer | None = None  # built on the first tree-by-tree catch-up
        self.scores = np.zeros(X.shape[0])
        self.trees = 0

    def start_from(self, scores: np.ndarray, trees: int) -> "KeptScores":
        """Begin from the scores of the booster's first ``trees`` trees (its prediction, as a float64 array)."""
        self.scores[:] = scores
        self.trees = int(trees)
        return self

    def snapshot(self) -> "KeptScores":
        """An instance with these rows and a copy of the scores, to be caught up by another booster whose first
        :attr:`trees` trees are this booster's (a copy of it): the rows, their source and the scorer are shared
        (read only), the scores are its own."""
        twin = copy.copy(self)
        twin.scores = self.scores.copy()
        return twin

    def catch_up(self, booster) -> np.ndarray:
        """The scores of every tree of ``booster`` (this instance's array, updated in place)."""
        total = booster.current_iteration()
        if total < self.trees:
            raise ValueError(f"the booster has {total} trees, fewer than the {self.trees} already scored")
        if total - self.trees > CATCH_UP_TREES:
            self.scores[:] = booster.predict(self.rows, raw_score=True, num_threads=self.num_threads)
        else:
            if self.scorer is None and total > self.trees:
                self.scorer = TreeScorer(self.rows, self.num_threads)
            for tree in range(self.trees, total):
                self.scores += self.scorer.tree_values(booster, tree)
        self.trees = total
        return self.scores

    def span_in(self, X: np.ndarray) -> tuple[int, int] | None:
        """(a, b) when rows a..b−1 of ``X`` are this instance's rows: the same memory as the array they were read
        from (a view of ``X``, or ``X`` itself) and still the same bits (:func:`_same_bits`); else None."""
        source = self.source
        if (not self.copied or X.ndim != 2 or source.ndim != 2 or X.dtype != source.dtype or X.shape[1] != source.shape[1]
                or not X.flags.c_contiguous or not source.flags.c_contiguous or X.shape[0] < source.shape[0]):
            return None
        offset = source.__array_interface__["data"][0] - X.__array_interface__["data"][0]
        row = X.strides[0]
        if row <= 0 or offset < 0 or offset % row:
            return None
        a = offset // row
        b = a + source.shape[0]
        if b > X.shape[0] or not _same_bits(X[a:b], self.rows):
            return None
        return a, b
