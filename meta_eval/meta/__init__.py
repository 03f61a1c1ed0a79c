"""The rest of a metric paper's meta-evaluation (issue 13), one concept per module:

- :mod:`~meta_eval.meta.judgments` — robustness to incomplete judgments (reduced qrels, standard and condensed
  forms, τ_b / τ_AP and discriminative power against the full qrels);
- :mod:`~meta_eval.meta.reusability` — pool reusability (leave-one-run-out, leave-one-group-out);
- :mod:`~meta_eval.meta.anova` — two-way ANOVA of system and topic effects, ω², system-pair effect sizes;
- :mod:`~meta_eval.meta.topicsize` — Sakai's topic-set-size design (t-test and ANOVA based);
- :mod:`~meta_eval.meta.intuitiveness` — Sakai's intuitiveness against a gold criterion;
- :mod:`~meta_eval.meta.standardise` — per-topic score standardisation (z, normal CDF) with a reusable reference;
- split-half stability lives beside the swap and error rates: :func:`meta_eval.discpower.split_half`.

Every analysis maps score arrays (or a collection, for the two that re-judge it) to a result object; the
declarations in :mod:`meta_eval.analyses` put each one into the study and its command (tables, figure, findings);
:mod:`~meta_eval.meta.stages` keeps the old stage functions as deprecated wrappers of those declarations.
"""

from meta_eval.discpower.stability import SplitHalf, split_half
from meta_eval.meta.anova import Anova, two_way_anova
from meta_eval.meta.intuitiveness import Intuitiveness, intuitiveness
from meta_eval.meta.judgments import IncompleteJudgments, incomplete_judgments, judgment_masks, significant_pairs
from meta_eval.meta.reusability import Reusability, prefix_groups, reusability, unique_contributions
from meta_eval.meta.standardise import Standardisation, fit_standardisation, standardise, standardise_all
from meta_eval.meta.topicsize import (TopicSetSize, anova_power, anova_topics, sakai_initial_n, topic_set_size,
                                      ttest_power, ttest_topics)

__all__ = [
    "Anova", "IncompleteJudgments", "Intuitiveness", "Reusability", "SplitHalf", "Standardisation", "TopicSetSize",
    "anova_power", "anova_topics", "fit_standardisation", "incomplete_judgments", "intuitiveness", "judgment_masks",
    "prefix_groups", "reusability", "sakai_initial_n", "significant_pairs", "split_half", "standardise",
    "standardise_all", "topic_set_size", "ttest_power", "ttest_topics", "two_way_anova", "unique_contributions",
]
