"""The chatter classifier, measured on the held-out labelled set in tests/evals/.

Thresholds are floors the shipped model must keep; the figures are printed with -s.
A false positive (memorable text denied as chatter) loses a memory, so chatter
precision has the higher floor.
"""

from pathlib import Path

import pytest

from episodic.domain.policy.chatter import ChatterClassifier, default_classifier, load_examples, trained_on_shipped_set

EVAL_SET = Path(__file__).parents[1] / "evals" / "chatter_eval.jsonl"
TRAIN_SET = Path(__file__).parents[2] / "layers" / "episodic" / "domain" / "policy" / "data" / "chatter_train.jsonl"


def _confusion(classifier: ChatterClassifier, examples):
    tp = fp = fn = tn = 0
    for e in examples:
        predicted = classifier.is_chatter(e.text)
        tp += predicted and e.chatter
        fp += predicted and not e.chatter
        fn += (not predicted) and e.chatter
        tn += (not predicted) and not e.chatter
    return tp, fp, fn, tn


def test_given_the_held_out_set_when_classified_then_precision_and_recall_clear_their_floors():
    examples = load_examples(EVAL_SET.read_text().splitlines())
    assert len(examples) >= 200
    tp, fp, fn, tn = _confusion(default_classifier(), examples)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    accuracy = (tp + tn) / len(examples)
    print(
        f"\nchatter classifier on {len(examples)} held-out rows: precision={precision:.3f} "
        f"recall={recall:.3f} accuracy={accuracy:.3f} (tp={tp} fp={fp} fn={fn} tn={tn})"
    )
    assert precision >= 0.93
    assert recall >= 0.90
    assert accuracy >= 0.92


def test_given_the_same_training_data_when_trained_twice_then_the_model_is_identical():
    rows = [
        '{"text": "hi!", "eventType": "conversation_turn", "label": "chatter"}',
        '{"text": "Deploy failed: OOMKilled on api-3", "eventType": "incident_or_failure", "label": "memorable"}',
    ]
    a = ChatterClassifier.train(load_examples(rows))
    b = ChatterClassifier.train(load_examples(rows))
    assert a.weights == b.weights


def test_given_a_greeting_before_real_content_when_classified_then_it_is_memorable():
    clf = default_classifier()
    assert clf.is_chatter("thanks, have a great day!")
    assert not clf.is_chatter("Hi! I'm moving to the Lisbon office on March 3rd")


def test_given_a_decision_when_explained_then_the_top_features_are_reported():
    top = default_classifier().explain("thank you so much")
    assert top and all(isinstance(name, str) for name, _ in top)


def test_given_the_labelled_set_when_trained_then_the_shipped_weights_are_what_training_gives():
    """The shipped file cannot drift from the data: ``make policy-model`` rewrites it."""
    shipped, retrained = default_classifier(), trained_on_shipped_set()
    assert shipped.threshold == pytest.approx(retrained.threshold)
    assert shipped.weights.keys() == retrained.weights.keys()
    assert shipped.weights == pytest.approx(retrained.weights, rel=1e-6, abs=1e-12)


def test_given_the_shipped_weights_when_classifying_the_labelled_sets_then_every_verdict_is_the_trained_models():
    shipped, retrained = default_classifier(), trained_on_shipped_set()
    examples = load_examples([*EVAL_SET.read_text().splitlines(), *TRAIN_SET.read_text().splitlines()])
    for e in examples:
        assert shipped.is_chatter(e.text) == retrained.is_chatter(e.text), e.text
        assert shipped.probability(e.text) == pytest.approx(retrained.probability(e.text), abs=1e-5)


def test_given_a_model_when_written_and_read_back_then_it_is_the_same_text():
    model = default_classifier()
    assert ChatterClassifier.from_json(model.to_json()).to_json() == model.to_json()
