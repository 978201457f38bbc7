"""cstorch.metrics: evaluation metrics whose state the system updates in place inside the step.

    accuracy = cstorch.metrics.AccuracyMetric("accuracy")     # R1.8: also compute_on_system=True

    @cstorch.trace                                             # R1.8: @cstorch.compile_step
    def eval_step(batch):
        inputs, targets = batch
        outputs = compiled_model(inputs)
        accuracy(labels=targets.clone(), predictions=outputs.argmax(-1).int())
        return loss_fn(outputs, targets)

    for batch in executor:
        eval_step(batch)
    print(f"Accuracy: {float(accuracy)}")                      # the final value, after the loop

`Metric` (metric.py) is the base a script's own metric subclasses, as the later releases write one
(reset / update / compute, `register_state`); the built-in metrics are written on it:
AccuracyMetric, PerplexityMetric, DiceCoefficientMetric, MeanIOUMetric, FBetaScoreMetric, MeanMetric. rules.py
holds when a metric may be made, updated and read; listing.py names every metric of the process
(`get_all_metrics()`, and R1.8's `compute_all_metrics()`).
"""

from .accuracy import AccuracyMetric
from .dice_coefficient import DiceCoefficientMetric
from .fbeta_score import FBetaScoreMetric
from .listing import MetricValues, compute_all_metrics, get_all_metrics
from .mean import MeanMetric
from .mean_iou import MeanIOUMetric
from .metric import Metric
from .perplexity import PerplexityMetric

__all__ = ["Metric", "AccuracyMetric", "PerplexityMetric", "DiceCoefficientMetric", "MeanIOUMetric",
           "FBetaScoreMetric", "MeanMetric", "get_all_metrics", "compute_all_metrics", "MetricValues"]
