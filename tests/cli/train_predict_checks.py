"""check_train.py's predict and evaluate modes: docs/examples/predict.py and `train --evaluate` give
the figures the run itself reported."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, run  # noqa: E402


def check_predict(workdir, command):
    import csv
    import numpy as np

    predict = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "examples", "predict.py")
    rng = np.random.default_rng(0)

    def write(path, header, rows, delimiter=","):
        with open(path, "w", newline="") as f:
            w = csv.writer(f, delimiter=delimiter)
            w.writerow(header)
            w.writerows(rows)

    def last_epoch(run_dir):
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            return [json.loads(line) for line in f if '"kind":"epoch"' in line][-1]

    def train_and_predict(name, train_rows, val_rows, header, settings, delimiter=",", gzip_val=False):
        paths = {part: os.path.join(workdir, f"{name}-{part}.csv") for part in ("train", "val")}
        write(paths["train"], header, train_rows, delimiter)
        write(paths["val"], header, val_rows, delimiter)
        if gzip_val:  # as pandas' to_csv("x.csv.gz") writes it
            import gzip
            with open(paths["val"], "rb") as plain, gzip.open(paths["val"] + ".gz", "wb") as packed:
                packed.write(plain.read())
            paths["val"] += ".gz"
        run_dir = os.path.join(workdir, name)
        result = run(command + ["--set", "data.source=csv", "--set", "data.path=" + paths["train"], "--set", "data.val_path=" + paths["val"],
                                "--set", "logging.dir=" + run_dir, "--set", "train.epochs=3", "--set", "logging.progress=lines"] + settings)
        if result.returncode != 0:
            fail(f"{name}: training exited {result.returncode}:\n{result.stdout}{result.stderr}")
        predicted = run([sys.executable, predict, os.path.join(run_dir, "model.safetensors"), paths["val"]])
        if predicted.returncode != 0:
            fail(f"{name}: predict.py exited {predicted.returncode}:\n{predicted.stdout}{predicted.stderr}")
        return list(csv.reader(predicted.stdout.splitlines())), last_epoch(run_dir), result.stdout + result.stderr

    # Classification by class name, an id column left out, standardised features of mixed scale.
    def flower(i):
        kind = i % 3
        return [1000 + i, 150 * kind + rng.normal(0, 40), kind + rng.normal(0, 0.8), ["iris", "lily", "rose"][kind]]
    rows = [flower(i) for i in range(600)]
    header = ["id", "height_mm", "petals", "species"]
    table, epoch, _ = train_and_predict("classes", rows[:480], rows[480:], header,
                                     ["--set", "data.labels=species", "--set", "data.exclude=[id]", "--set", "data.standardize=true",
                                      "--set", "model.name=mlp", "--set", "model.hidden=[32, 16]", "--set", "model.norm=layer",
                                      "--set", "model.activation=gelu"])
    if table[0] != ["class", "p(iris)", "p(lily)", "p(rose)"]:
        fail(f"classes: predict.py's header is {table[0]}")
    # The probabilities: each row's add up to 1, name the class, and give the run's val loss.
    probabilities = np.array([[float(p) for p in row[1:]] for row in table[1:]])
    if np.abs(probabilities.sum(axis=1) - 1).max() > 1e-5 or any(table[0][1 + k] != f"p({row[0]})" for k, row in zip(probabilities.argmax(axis=1), table[1:])):
        fail("classes: predict.py's probabilities do not add up to 1 or do not name its class")
    truths = [["iris", "lily", "rose"].index(truth[3]) for truth in rows[480:]]
    loss = -np.mean(np.log(probabilities[np.arange(len(truths)), truths]))
    if abs(loss - epoch["val_loss"]) > 1e-4 * epoch["val_loss"]:
        fail(f"classes: predict.py's probabilities give a loss of {loss}; the run's val loss {epoch['val_loss']}")
    accuracy = np.mean([row[0] == truth[3] for row, truth in zip(table[1:], rows[480:])])
    if len(table) != 121 or abs(accuracy - epoch["val_accuracy"]) > 1e-9:
        fail(f"classes: predict.py's accuracy {accuracy} over {len(table) - 1} rows; the run's val accuracy {epoch['val_accuracy']}")
    print(f"classes: predict.py's accuracy {accuracy:.4f} is the run's val accuracy, its probabilities' loss {loss:.4f} the val loss")

    # Regression of two targets far from unit scale, standardised, a bool feature, ';' between cells.
    def house(_):
        sqm, new = rng.uniform(40, 250), rng.random() < 0.3
        return [round(sqm, 1), "True" if new else "False", round(3000 * sqm + 50000 * new + rng.normal(0, 20000)),
                round(sqm / 20 + rng.normal(0, 1), 2)]
    rows = [house(i) for i in range(500)]
    table, epoch, _ = train_and_predict("targets", rows[:400], rows[400:], ["sqm", "new", "price", "rooms"],
                                     ["--set", "data.task=regression", "--set", "data.labels=[price, rooms]", "--set", "data.standardize=true",
                                      "--set", "data.standardize_targets=true", "--set", "model.name=mlp", "--set", "model.hidden=[32]"], ";",
                                     gzip_val=True)
    if table[0] != ["price", "rooms"]:
        fail(f"targets: predict.py's header is {table[0]}")
    errors = np.array([[float(p) - float(t) for p, t in zip(row, truth[2:])] for row, truth in zip(table[1:], rows[400:])])
    mae = np.abs(errors).mean()
    if abs(mae - epoch["val_mae"]) > 1e-4 * epoch["val_mae"]:
        fail(f"targets: predict.py's MAE {mae}; the run's val MAE {epoch['val_mae']}")
    print(f"targets: predict.py's MAE {mae:.2f} is the run's val MAE {epoch['val_mae']:.2f}")

    # Columns of categories one-hot encoded (data.categorical): text, and numbers as categories
    # ("10" after "2"); in the validation file a missing cell and a category the training file lacks.
    def pet(i):
        colour, grade = ["red", "green", "blue"][i % 3], ["1", "2", "10"][(i // 3) % 3]
        return [colour, grade, round(rng.normal(), 3), int((colour == "red") != (grade == "10"))]
    rows = [pet(i) for i in range(540)]
    rows[500][0], rows[501][0] = "", "purple"
    table, epoch, _ = train_and_predict("categories", rows[:450], rows[450:], ["colour", "grade", "noise", "label"],
                                     ["--set", "data.labels=label", "--set", "data.categorical=[colour, grade]",
                                      "--set", "model.name=mlp", "--set", "model.hidden=[32]", "--set", "optimizer.lr=0.01"])
    with open(os.path.join(workdir, "categories", "model.safetensors"), "rb") as f:  # the header: its length, then JSON
        meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
    if json.loads(meta["data.categories"]) != {"colour": ["blue", "green", "red"], "grade": ["1", "2", "10"]}:
        fail(f"categories: the weights' data.categories is {meta['data.categories']}")
    accuracy = np.mean([int(row[0]) == truth[3] for row, truth in zip(table[1:], rows[450:])])
    if len(table) != 91 or abs(accuracy - epoch["val_accuracy"]) > 1e-9 or accuracy < 0.8:  # chance: 0.56
        fail(f"categories: predict.py's accuracy {accuracy} over {len(table) - 1} rows; the run's val accuracy {epoch['val_accuracy']}")
    print(f"categories: predict.py's accuracy {accuracy:.4f} is the run's val accuracy")

    # Unbalanced classes (10 % churn) weighed by train.class_weights: balanced, best.pt kept by the
    # balanced accuracy, which predict.py's predictions give again: each class's recall, averaged.
    def customer(i):
        churn = i % 10 == 0
        return [round(rng.normal(1.5 if churn else 0, 1), 3), round(rng.normal(), 3), "churn" if churn else "stay"]
    rows = [customer(i) for i in range(1000)]
    table, epoch, output = train_and_predict("unbalanced", rows[:800], rows[800:], ["usage", "noise", "outcome"],
                                             ["--set", "data.labels=outcome", "--set", "train.class_weights=balanced",
                                              "--set", "checkpoint.best_metric=val_balanced_accuracy", "--set", "model.name=mlp",
                                              "--set", "model.hidden=[16]", "--set", "optimizer.lr=0.01"])
    right = {name: sum(row[0] == truth[2] for row, truth in zip(table[1:], rows[800:]) if truth[2] == name) for name in ("churn", "stay")}
    recalls = {name: right[name] / sum(truth[2] == name for truth in rows[800:]) for name in right}
    answers = {name: sum(row[0] == name for row in table[1:]) for name in right}
    balanced = np.mean(list(recalls.values()))
    if len(table) != 201 or abs(balanced - epoch["val_balanced_accuracy"]) > 1e-9:
        fail(f"unbalanced: predict.py's balanced accuracy {balanced} over {len(table) - 1} rows; the run's {epoch['val_balanced_accuracy']}")
    if recalls["churn"] < 0.5:  # unweighted, the model hardly ever answers churn
        fail(f"unbalanced: with balanced class weights, only {recalls['churn']:.2f} of the churned customers are found")
    for expected in ("class weights (train.class_weights: balanced, from the training labels' counts): 'churn' 5, 'stay' 0.556",
                     "% (balanced " + format(100 * epoch["val_balanced_accuracy"], ".2f") + "%)",
                     f"val per class after epoch 3: 'churn' {right['churn']} of 20 found (recall {100 * recalls['churn']:.1f} %), "
                     f"{right['churn']} of {answers['churn']} predictions right (precision {100 * right['churn'] / answers['churn']:.1f} %); "
                     f"'stay' {right['stay']} of 180 found (recall {100 * recalls['stay']:.1f} %), "
                     f"{right['stay']} of {answers['stay']} predictions right (precision {100 * right['stay'] / answers['stay']:.1f} %)"):
        if expected not in output:
            fail(f"unbalanced: the run did not say '{expected}':\n{output}")
    print(f"unbalanced: predict.py's balanced accuracy {balanced:.4f} is the run's; churn recall {recalls['churn']:.2f}")


def check_evaluate(workdir, command):
    import csv
    import numpy as np

    predict = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "examples", "predict.py")
    rng = np.random.default_rng(1)

    def customer(i):
        churn = i % 4 == 0
        noise = round(rng.normal(), 3)
        # Every 7th row misses its noise value: data.missing mean fills it with the training rows'
        # mean, which model.safetensors records for predict.py.
        return [round(50 + 30 * rng.normal(2.5 if churn else 0, 1), 2), "" if i % 7 == 3 else noise, "churn" if churn else "stay"]
    paths = {}
    for part, count in (("train", 800), ("test", 240)):
        paths[part] = os.path.join(workdir, part + ".csv")
        with open(paths[part], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["spend", "noise", "outcome"])
            w.writerows(customer(i) for i in range(count))
    run_dir = os.path.join(workdir, "run")
    trained = run(command + ["--set", "data.source=csv", "--set", "data.path=" + paths["train"], "--set", "data.labels=outcome",
                             "--set", "data.val_fraction=0.25", "--set", "data.standardize=true", "--set", "data.missing=mean",
                             "--set", "model.name=mlp",
                             "--set", "model.hidden=[16]", "--set", "train.epochs=4", "--set", "optimizer.lr=0.01",
                             "--set", "checkpoint.best_metric=val_accuracy",
                             "--set", "logging.dir=" + run_dir])
    if trained.returncode != 0:
        fail(f"training exited {trained.returncode}:\n{trained.stdout}{trained.stderr}")
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        epochs = [json.loads(line) for line in f if '"kind":"epoch"' in line]
    config = os.path.join(run_dir, "config.yaml")
    before = sorted(os.listdir(run_dir))

    def evaluate(weights, *settings):
        result = run(command[:1] + ["train", config, "--evaluate", weights, "--json"] + list(settings))
        if result.returncode != 0:
            fail(f"--evaluate {weights} exited {result.returncode}:\n{result.stdout}{result.stderr}")
        try:
            return json.loads(result.stdout), result.stderr
        except json.JSONDecodeError:
            fail(f"--evaluate --json printed more than one JSON object on stdout:\n{result.stdout}")

    # best.pt: the epoch with the best val accuracy, and its figures.
    figures, said = evaluate(os.path.join(run_dir, "checkpoints", "best.pt"))
    if figures.get("schema") != "gputrain.evaluation/1":
        fail(f"--evaluate --json: schema {figures.get('schema')!r}, not gputrain.evaluation/1")
    best = max(range(len(epochs)), key=lambda e: (epochs[e]["val_accuracy"], -e))
    if figures["checkpoint_epochs_done"] != best + 1 or figures["samples"] != 200:
        fail(f"best.pt: evaluated as epoch {figures['checkpoint_epochs_done']} on {figures['samples']} samples; its run's best "
             f"epoch is {best + 1} of 200 held-out samples")
    for key in ("val_accuracy", "val_balanced_accuracy"):
        if figures[key] != epochs[best][key]:
            fail(f"best.pt: {key} {figures[key]}; its epoch had {epochs[best][key]}")
    if abs(figures["val_loss"] - epochs[best]["val_loss"]) > 1e-9:
        fail(f"best.pt: val_loss {figures['val_loss']}; its epoch had {epochs[best]['val_loss']}")
    if "val loss" not in said or "per class: 'churn'" not in said:
        fail(f"best.pt: the lines on stderr lack the figures or the per-class line:\n{said}")
    print(f"best.pt: epoch {best + 1}'s figures again (val accuracy {figures['val_accuracy']:.4f})")

    # The test file, by a model the run standardised on its 600 training rows: predict.py applies the
    # weights file's own mean and std, so the two agree only if the evaluation kept those rows.
    figures, _ = evaluate(os.path.join(run_dir, "model.safetensors"), "--set", "data.val_path=" + paths["test"])
    predicted = run([sys.executable, predict, os.path.join(run_dir, "model.safetensors"), paths["test"]])
    if predicted.returncode != 0:
        fail(f"predict.py exited {predicted.returncode}:\n{predicted.stdout}{predicted.stderr}")
    table = list(csv.reader(predicted.stdout.splitlines()))
    with open(paths["test"]) as f:
        truths = [row[2] for row in list(csv.reader(f))[1:]]
    names = [column[2:-1] for column in table[0][1:]]
    probabilities = np.array([[float(p) for p in row[1:]] for row in table[1:]])
    loss = -np.mean(np.log(probabilities[np.arange(len(truths)), [names.index(t) for t in truths]]))
    accuracy = np.mean([row[0] == t for row, t in zip(table[1:], truths)])
    if figures["samples"] != 240 or abs(figures["val_accuracy"] - accuracy) > 1e-9 or abs(figures["val_loss"] - loss) > 1e-4 * loss:
        fail(f"test.csv: evaluated accuracy {figures['val_accuracy']}, loss {figures['val_loss']} on {figures['samples']} rows; "
             f"predict.py's give {accuracy}, {loss} on {len(truths)}")
    churn = next(c for c in figures["classes"] if c["name"] == "churn")
    found = sum(row[0] == "churn" and t == "churn" for row, t in zip(table[1:], truths))
    if churn["samples"] != truths.count("churn") or churn["right"] != found:
        fail(f"test.csv: churn {churn}; predict.py finds {found} of {truths.count('churn')}")
    print(f"test.csv: accuracy {accuracy:.4f} and loss {loss:.4f}, as predict.py's probabilities give")

    if sorted(os.listdir(run_dir)) != before:
        fail(f"the run folder changed: {before} -> {sorted(os.listdir(run_dir))}")
    missing = run(command[:1] + ["train", config, "--evaluate", os.path.join(run_dir, "no-such.pt")])
    if missing.returncode != 2 or "does not exist" not in missing.stderr:
        fail(f"a missing weights file: exit {missing.returncode}:\n{missing.stderr}")
    # With ranks to start, the file is checked before any starts: one error, not one per rank.
    ranks = run(command[:1] + ["train", config, "--evaluate", os.path.join(run_dir, "no-such.pt"), "--set", "device=cpu",
                               "--nproc-per-node", "2"])
    if ranks.returncode != 2 or ranks.stderr.count("does not exist") != 1 or "launching" in ranks.stderr:
        fail(f"a missing weights file with --nproc-per-node 2: exit {ranks.returncode}:\n{ranks.stderr}")
    print("nothing written; a missing weights file is exit 2, said once before ranks start")
