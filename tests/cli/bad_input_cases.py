"""The bad-input corpus: each case a command line, the files it needs, and the exit code docs give.

Exit codes (docs/troubleshooting.md): 1 the run or a check failed, 2 bad usage or an invalid
config or input (nothing was started), 3 the environment is unusable. check_bad_input.py runs
them. `{w}` in an argument is the case's own folder, `{f}` the format fixtures' folder.
"""

GOOD_CSV = "a,b,label\n" + "".join(f"{i / 10},{(i * 3) % 7},{i % 2}\n" for i in range(40))


def config(data="  path: good.csv\n  labels: label\n", model="  name: mlp\n", train="  epochs: 1\n", extra=""):
    return f"model:\n{model}data:\n{data}train:\n{train}{extra}"


def case(name, args, exit, files=None, expect="", style="error", env=None):
    """style "error": an `error:` line then `  fix:`; "check" (verify, quick-train): a `[FAIL]` line then `fix:`.
    `env`: variables set for the command (an option's environment twin)."""
    return {"name": name, "args": args, "exit": exit, "files": files or {}, "expect": expect, "style": style, "env": env or {}}


def train_case(name, text, exit=2, expect="", files=None, extra_args=()):
    """`gputrain train c.yaml` on the CPU, in the case's folder, with good.csv beside the config."""
    all_files = {"good.csv": GOOD_CSV, "c.yaml": text}
    all_files.update(files or {})
    return case(name, ["train", "c.yaml", "--set", "device=cpu", "--set", "logging.dir=run", *extra_args], exit, all_files, expect)


def config_cases():
    values = [  # (name, train section line or data/model line, expected text)
        ("epochs_zero", "  epochs: 0\n", "train.epochs"),
        ("epochs_negative", "  epochs: -1\n", "train.epochs"),
        ("epochs_text", "  epochs: abc\n", "train.epochs"),
        ("epochs_fraction", "  epochs: 1.5\n", "train.epochs"),
        ("epochs_times_steps_overflow", "  epochs: 9223372036854775807\n  batch_size: 1\n", "train.max_steps"),
        ("epochs_beyond_int64", "  epochs: 99999999999999999999999\n", "train.epochs"),
        ("epochs_2_60_times_steps", "  epochs: 1152921504606846976\n  batch_size: 1\n", "train.max_steps"),
        ("batch_zero", "  epochs: 1\n  batch_size: 0\n", "train.batch_size"),
        ("batch_negative", "  epochs: 1\n  batch_size: -5\n", "train.batch_size"),
        ("batch_beyond_int64", "  epochs: 1\n  batch_size: 1000000000000000000000000000000\n", "train.batch_size"),
        ("grad_accum_zero", "  epochs: 1\n  grad_accum: 0\n", "train.grad_accum"),
        ("batch_times_grad_accum_overflow", "  epochs: 1\n  batch_size: 16\n  grad_accum: 4611686018427387904\n",
         "train.grad_accum 4611686018427387904 samples a step is more than 2^63 - 1"),
        ("precision_fp8", "  epochs: 1\n  precision: fp8\n", "train.precision"),
        ("clip_negative", "  epochs: 1\n  clip_grad_norm: -1\n", "train.clip_grad_norm"),
        ("label_smoothing_two", "  epochs: 1\n  label_smoothing: 2\n", "train.label_smoothing"),
        ("max_time_parsecs", "  epochs: 1\n  max_time: 5 parsecs\n", "train.max_time"),
        ("max_steps_negative", "  max_steps: -3\n", "train.max_steps"),
        ("cuda_graphs_yes", "  epochs: 1\n  cuda_graphs: yes please\n", "train.cuda_graphs"),
        ("seed_text", "  epochs: 1\n  seed: lucky\n", "train.seed"),
        ("unknown_train_key", "  epoch: 1\n", "did you mean"),
        ("train_value_is_a_map", "  epochs: {a: 1}\n", "train.epochs"),
        ("python_object_tag", "  epochs: 1\n  optimizer: !!python/object:torch.optim.Adam {lr: 1}\n", "carries the YAML tag"),
        ("include_tag", "  epochs: !include epochs.yaml\n", "'train.epochs' carries the YAML tag '!include'"),
    ]
    cases = [train_case("config_" + n, config(train=t), expect=e) for n, t, e in values]
    data_values = [
        ("data_source_parquet", "  source: parquet\n  path: good.csv\n", "data.source"),
        ("val_fraction_above_one", "  path: good.csv\n  labels: label\n  val_fraction: 1.5\n", "data.val_fraction"),
        ("num_workers_negative", "  path: good.csv\n  labels: label\n  num_workers: -1\n", "data.num_workers"),
        ("num_workers_beyond_threads", "  path: good.csv\n  labels: label\n  num_workers: 2147483648\n",
         "an integer >= 0 and <= 1024, or auto"),
        ("postgres_streams_zero", "  source: postgres\n  query: SELECT 1 AS a, 0 AS label\n  labels: label\n  streams: 0\n",
         "data.streams: found '0'; allowed: an integer >= 1 and <= 32, or auto"),
        ("path_with_a_nul", '  path: "good.csv\\0.bak"\n  labels: label\n', "data.path: holds a NUL character"),
        ("labels_missing_column", "  path: good.csv\n  labels: nope\n", "nope"),
        ("features_missing_column", "  path: good.csv\n  labels: label\n  features: [a, zz]\n", "zz"),
        ("synthetic_shape_overflow", "  source: synthetic\n  shape: [3037000500, 3037000500]\n",
         "data.shape [3037000500, 3037000500] makes one sample's bytes more than 2^63 - 1"),
        ("synthetic_samples_overflow", "  source: synthetic\n  shape: [3, 16, 16]\n  samples: 4611686018427387904\n",
         "data.samples 4611686018427387904 and data.val_samples 1024 of samples shaped [3, 16, 16] are, in bytes, more than"),
        ("synthetic_sample_beyond_ram", "  source: synthetic\n  shape: [100000, 100000]\n  samples: 8\n  val_samples: 0\n",
         "one sample alone takes 37.25 GiB: make data.shape smaller"),
        ("synthetic_classes_beyond_ram", "  source: synthetic\n  shape: [1000000]\n  classes: 1000000\n  samples: 64\n",
         "the teacher that labels the synthetic task takes 3.64 TiB for its 1000000 classes: fewer data.classes"),
        ("synthetic_sequence_beyond_ram", "  source: synthetic\n  shape: [100000, 1024]\n  samples: 8\n  val_samples: 0\n",
         "for its 4096 reference samples: make data.shape smaller"),
        ("image_size_zero", "  source: image_folder\n  path: .\n  image_size: [0, 0]\n", "data.image_size"),
        ("image_size_huge", "  source: image_folder\n  path: .\n  image_size: [100000, 100000]\n", "each side from 1 to 8192"),
        ("image_size_overflow", "  source: image_folder\n  path: .\n  image_size: 2000000000\n", "each side from 1 to 8192"),
        ("task_unknown", "  path: good.csv\n  labels: label\n  task: clustering\n", "data.task"),
    ]
    cases += [train_case("config_" + n, config(data=d), expect=e) for n, d, e in data_values]
    model_values = [
        ("model_unknown", "  name: resnet19\n", "did you mean"),
        ("model_dropout_one", "  name: mlp\n  dropout: 1.0\n", "model.dropout"),
        ("model_hidden_zero", "  name: mlp\n  hidden: [0]\n", "model.hidden"),
        ("model_hidden_negative", "  name: mlp\n  hidden: [-4]\n", "model.hidden"),
        ("model_name_huge", "  name: " + "x" * 100000 + "\n", "model.name"),
        ("model_hidden_beyond_memory", "  name: mlp\n  hidden: [4000000000]\n", "cannot be built"),
        ("model_hidden_overflow", "  name: mlp\n  hidden: [9223372036854775807]\n", "cannot be built"),
    ]
    cases += [train_case("config_" + n, config(model=m), expect=e) for n, m, e in model_values]
    synthetic_sequences = "  source: synthetic\n  shape: [16, 8]\n  samples: 64\n"
    cases.append(train_case("config_model_layers_beyond_memory", config(data=synthetic_sequences, model="  name: transformer\n  layers: 100000000\n"),
                            expect="its 100000000 encoder layers take"))
    other = [
        ("top_unknown_key", config() + "modle:\n  name: mlp\n", "unknown key"),
        ("device_tpu", config() + "device: tpu\n", "device"),
        ("device_cuda_text", config() + "device: cuda:abc\n", "device"),
        ("optimizer_lr_negative", config() + "optimizer:\n  lr: -1\n", "optimizer.lr"),
        ("optimizer_lr_nan", config() + "optimizer:\n  lr: .nan\n", "optimizer.lr"),
        ("optimizer_lr_inf", config() + "optimizer:\n  lr: .inf\n", "optimizer.lr"),
        ("optimizer_betas_above_one", config() + "optimizer:\n  name: adam\n  betas: [2, 3]\n", "optimizer.betas"),
        ("optimizer_adam_eps_zero", config() + "optimizer:\n  name: adam\n  eps: 0\n", "NaN weights from the first such step"),
        ("scheduler_typo", config() + "scheduler:\n  name: cosin\n", "did you mean"),
        ("max_memory_unit", config() + "device:\n  max_memory: 5 XB\n", "max_memory"),
        ("param_group_without_params_key", config() + "optimizer:\n  param_groups:\n    - {params: [1], lr: 0.1}\n    - default\n",
         "optimizer.param_groups[1]: found 'default'; allowed: an entry such as"),
        ("tab_indent", "train:\n\tepochs: 1\n", "tabs"),
        ("misaligned_key", "train:\n  epochs: 1\n   batch_size: 4\n", "indented"),
        ("unclosed_list", "data:\n  features: [" + ",".join(f"f{i}" for i in range(5000)) + "\ntrain:\n  epochs: 1\n", "never closed"),
        ("unclosed_map", "data: {path: good.csv\ntrain:\n  epochs: 1\n", "never closed"),
        ("deep_nesting", "x-deep: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than"),
        ("deep_valid_nesting", "x-deep: " + "[" * 600 + "]" * 600 + "\n", "nested more than"),
        ("duplicate_key", "train:\n  epochs: 1\n  epochs: 2\n", "set twice"),
        ("section_as_value", config() + "logging: 5\n", "section"),
        ("list_document", "- train\n- data\n", "mapping"),
        ("binary_garbage", "\x00\x01\x02garbage\x00" * 10, ""),
        ("unknown_alias", "train: *nothing\n", ""),
        ("scalar_document", "just words\n", "mapping"),
        ("mlflow_file_store", config() + "logging:\n  mlflow:\n    tracking_uri: file:./mlruns\n", "mlflow server"),
        ("mlflow_no_server", config() + "logging:\n  mlflow:\n    experiment: sweeps\n", "MLFLOW_TRACKING_URI"),
        ("mlflow_no_host", config() + "logging:\n  mlflow:\n    tracking_uri: 'http://:5000'\n", "which is not an address to connect to"),
        ("mlflow_timeout_none", config() + "logging:\n  mlflow:\n    tracking_uri: http://127.0.0.1:9\n    timeout: none\n",
         "logging.mlflow.timeout"),
    ]
    cases += [train_case("config_" + n, t, expect=e) for n, t, e in other]
    cases += [
        case("config_missing_file", ["train", "no-such.yaml"], 2, expect="does not exist"),
        case("config_from_standard_input", ["train", "-"], 2, expect="'-' (standard input) is not one"),
        case("config_is_a_folder", ["train", "."], 2, expect="is a folder"),
        case("config_is_data", ["train", "good.csv"], 2, files={"good.csv": GOOD_CSV},
             expect="'good.csv' is csv data, not a YAML config"),
        case("config_over_4mib", ["train", "big.yaml"], 2, files={"big.yaml": "# " + "x" * (5 << 20) + "\n"},
             expect="is over 4 MiB, more than any config"),
        case("run_folder_holds_the_config", ["train", "config.yaml", "--set", "device=cpu", "--set", "logging.dir=."], 2,
             files={"good.csv": GOOD_CSV, "config.yaml": config()},
             expect="logging.dir '.' holds config.yaml, which no gputrain run wrote there"),
        case("set_without_value", ["train", "--set", "train.epochs"], 2, expect="KEY=VALUE"),
        case("set_unknown_key", ["train", "--set", "train.epoch=3"], 2, expect="did you mean"),
        case("set_bad_value", ["train", "--set", "train.epochs=0"], 2, expect="train.epochs"),
        case("set_section", ["train", "--set", "train=3"], 2, expect="section"),
        case("set_value_yaml_reads_as_nothing", ["train", "--set", "data.path=#train.csv"], 2,
             expect="YAML reads '#train.csv' as no value (# starts a comment)"),
    ]
    return cases


def data_case(name, data, files=None, expect="", exit=2):
    return train_case("data_" + name, config(data=data), exit=exit, expect=expect, files=files)


def data_cases():
    bad = "{f}/bad/"
    npy_labels = "  labels: {f}/npz/y.npy\n"
    cases = [
        data_case("missing_file", "  path: nowhere.csv\n  labels: label\n", expect="does not exist"),
        data_case("csv_folder_without_parts", "  source: csv\n  path: parts\n  labels: label\n", {"parts/notes.txt": "x"}),
        data_case("empty_csv", "  path: empty.csv\n  labels: label\n", {"empty.csv": ""}),
        data_case("header_only_csv", "  path: h.csv\n  labels: label\n", {"h.csv": "a,b,label\n"}),
        data_case("one_row_csv", "  path: r.csv\n  labels: label\n", {"r.csv": "a,label\n1,0\n"}),
        data_case("single_class", "  path: s.csv\n  labels: label\n", {"s.csv": "a,label\n1,0\n2,0\n3,0\n"}),
        data_case("binary_as_csv", "  source: csv\n  path: bin.csv\n  labels: label\n", {"bin.csv": "\x00\x01\x02\x03" * 64}),
        data_case("ragged_csv", "  path: r.csv\n  labels: label\n", {"r.csv": "a,b,label\n1,2,0\n1,1\n"}),
        data_case("image_folder_empty", "  source: image_folder\n  path: imgs\n  image_size: 8\n", {"imgs/.keep": ""}),
        data_case("image_folder_no_images", "  source: image_folder\n  path: imgs\n  image_size: 8\n", {"imgs/cat/notes.txt": "x"}),
        data_case("image_folder_is_a_file", "  source: image_folder\n  path: good.csv\n  image_size: 8\n"),
        data_case("image_folder_none_decodes", "  source: image_folder\n  path: imgs\n  image_size: 8\n",
                  {"imgs/cat/1.jpg": "not an image", "imgs/dog/2.png": "nor this"},
                  expect="none of the first 2 samples can be read; the first: "),
        data_case("path_is_a_device", "  source: csv\n  path: /dev/zero\n  labels: label\n", expect="is a device, not a file"),
        data_case("val_path_missing", "  path: good.csv\n  labels: label\n  val_path: nope.csv\n", expect="data.val_path"),
        data_case("json_lines_named_csv", "  path: rows.csv\n  labels: label\n", {"rows.csv": '{"a": 1, "label": 0}\n{"a": 2, "label": 1}\n'},
                  expect="'rows.csv' is JSON lines (one object per line), not CSV"),
        data_case("git_lfs_pointer", "  path: data.csv\n  labels: label\n",
                  {"data.csv": "version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 48213\n"},
                  expect="is a Git LFS pointer (130 bytes) standing in for a 47.08 KiB file"),
        data_case("web_page_named_csv", "  path: data.csv\n  labels: label\n",
                  {"data.csv": "<!DOCTYPE html>\n<html><head><title>Page not found &middot; GitHub</title></head></html>\n"},
                  expect="'data.csv' is a web page ('Page not found \u00b7 GitHub'), not the file itself"),
        data_case("space_separated_csv", "  path: spaces.csv\n  labels: label\n", {"spaces.csv": "a b label\n0.5 1 0\n0.25 2 1\n"},
                  expect="'spaces.csv' separates its cells by spaces"),
        data_case("json_array_named_csv", "  path: data.csv\n  labels: label\n", {"data.csv": '[{"a": 1, "label": 0}]'},
                  expect="to_csv('table.csv', index=False)"),
    ]
    csv_fixtures = ["bad_cell.csv", "decimal_comma.csv", "empty_cells.csv", "missing_values.csv", "not_finite.csv",
                    "numeric.csv.bz2", "numeric.csv.xz", "numeric.zip", "numeric_cut.csv.gz", "text_columns.csv",
                    "thousands.csv", "unclosed_quote.csv", "free_text_bad_cell.csv"]
    for name in csv_fixtures:
        cases.append(data_case("fixture_" + name.replace(".", "_"), f"  source: csv\n  path: {bad}{name}\n  labels: label\n"))
    cases.append(data_case("fixture_excel_utf16", "  source: csv\n  path: {f}/csv/excel_utf16.csv\n  labels: label\n",
                           expect="UTF-16"))
    for name in ["truncated.npy", "not_npy.npy", "header_cut.npy", "object.npy", "structured.npy", "zero_dim.npy", "long_header.npy",
                 "huge_itemsize.npy", "many_dims.npy"]:
        cases.append(data_case("fixture_" + name.replace(".", "_"), f"  source: npy\n  path: {bad}{name}\n" + npy_labels))
    for name in ["negative_labels.npy", "fractional_labels.npy"]:
        cases.append(data_case("fixture_" + name.replace(".", "_"), f"  source: npy\n  path: {{f}}/npz/x.npy\n  labels: {bad}{name}\n"))
    for name in ["empty.npz", "truncated.npz", "corrupt.npz", "stored_crc.npz", "deflated_crc.npz"]:
        cases.append(data_case("fixture_" + name.replace(".", "_"), f"  source: npz\n  path: {bad}{name}\n  features: [x]\n  labels: y\n"))
    for name in ["truncated.safetensors", "huge_header.safetensors", "not_json.safetensors"]:
        cases.append(data_case("fixture_" + name.replace(".", "_"), f"  source: safetensors\n  path: {bad}{name}\n  features: [x]\n  labels: y\n"))
    return cases


def checkpoint_cases():
    def resume(name, content, expect=""):
        return train_case("checkpoint_" + name, config() + "checkpoint:\n  resume: ck.pt\n", files={"ck.pt": content}, expect=expect)

    def init(name, content, expect=""):
        return train_case("init_weights_" + name, config(model="  name: mlp\n  init_weights: w.safetensors\n"),
                          files={"w.safetensors": content}, expect=expect)

    def script(name, content, expect=""):
        return train_case("torchscript_" + name, config(model="  torchscript: m.pt\n"), files={"m.pt": content}, expect=expect)

    def fixture_script(name, expect):
        return train_case("torchscript_" + name, config(model="  torchscript: {f}/checkpoints/script_" + name + ".pt\n"), expect=expect)

    return [
        resume("zero_bytes", ""),
        resume("garbage", "this is not a checkpoint\n" * 20),
        resume("zip_garbage", "PK\x03\x04" + "\x00" * 200),
        train_case("checkpoint_missing", config() + "checkpoint:\n  resume: nope.pt\n", expect="does not exist"),
        init("zero_bytes", ""),
        init("garbage", "\xff" * 300),
        init("header_too_long", "\xff\xff\xff\xff\xff\xff\xff\x7f{}"),
        train_case("init_weights_missing", config(model="  name: mlp\n  init_weights: nope.safetensors\n"), expect="does not exist"),
        train_case("init_weights_pth_garbage", config(model="  name: mlp\n  init_weights: w.pth\n"), files={"w.pth": "\x80\x02" + "x" * 300},
                   expect="'w.pth' is not a torch.save file or gputrain checkpoint (not a zip archive)"),
        train_case("init_weights_other_model", config(model="  name: mlp\n  init_weights: {f}/checkpoints/weights.safetensors\n")),
        script("zero_bytes", "", expect="is not a TorchScript module"),
        script("garbage", "\xff" * 300, expect="is not a TorchScript module"),
        script("zip_garbage", "PK\x03\x04" + "\x00" * 200, expect="could not be read: PytorchStreamReader"),
        train_case("torchscript_device", config(model="  torchscript: /dev/zero\n"), expect="is a pipe or a device, not a file"),
        train_case("init_weights_device", config(model="  name: mlp\n  init_weights: /dev/zero\n"),
                   expect="is a pipe or a device, not a weights file"),
        train_case("torchscript_folder", config(model="  torchscript: {f}/checkpoints\n"), expect="is a folder"),
        train_case("torchscript_safetensors", config(model="  torchscript: {f}/checkpoints/weights.safetensors\n"),
                   expect="model.init_weights: "),
        train_case("torchscript_state_dict", config(model="  torchscript: {f}/checkpoints/state_dict.pth\n"),
                   expect="it has no constants.pkl"),
        train_case("torchscript_without_code", config(model="  torchscript: {f}/checkpoints/script_without_code.pt\n"),
                   expect="cannot compile: Unknown type name"),
        fixture_script("integer_outputs", "gives Long outputs"),
        fixture_script("no_parameters", "has no parameter that trains (0 parameters)"),
        fixture_script("frozen", "has no parameter that trains (1 parameter, none with requires_grad)"),
        fixture_script("double_weights", "has Double parameters"),
        fixture_script("predict_only", "has no forward method (it has predict)"),
        fixture_script("diverged_weights", "w holds NaN or inf in 1 of its 2 values, which no training step repairs"),
    ]


def flag_cases():
    q = ["quick-train"]
    cases = [
        case("quick_batch_zero", q + ["--batch-size", "0"], 2, expect="is too small"),
        case("quick_batch_text", q + ["--batch-size", "abc"], 2, expect="is not a whole number"),
        case("quick_batch_beyond_int64", q + ["--batch-size", "99999999999999999999"], 2, expect="is out of range"),
        case("quick_batch_negative", q + ["--batch-size=-4"], 2, expect="is too small"),
        case("quick_iterations_one", q + ["--iterations", "1"], 2, expect="is too small"),
        case("quick_device_tpu", q + ["--device", "tpu"], 2),
        case("quick_device_upper_case", q + ["--device", "CPU"], 2, expect="(did you mean cpu?)"),
        case("quick_precision_fp8", q + ["--precision", "fp8"], 2),
        case("quick_unknown_flag", q + ["--batchsize", "3"], 2, expect="not expected: --batchsize 3"),  # in the order typed
        case("quick_steps_is_iterations", q + ["--steps", "5"], 2, expect="did you mean '--iterations'?"),
        case("verify_quiet_is_a_log_level", ["verify", "--quiet"], 2, expect="did you mean '--log-level warn'?"),
        case("verify_gpu_is_chosen_by_visible_devices", ["verify", "--gpu", "1"], 2,
             expect="gputrain verify works on every GPU it can see; to choose them: CUDA_VISIBLE_DEVICES=1 gputrain verify"),
        case("train_steps_is_max_steps", ["train", "--steps", "100"], 2, expect="--set train.max_steps=100"),
        case("train_nproc_zero", ["train", "--nproc-per-node", "0"], 2, expect="is too small"),
        case("train_nproc_text", ["train", "--nproc-per-node", "two"], 2, expect="is not a whole number"),
        case("train_port_zero", ["train", "--master-port", "0"], 2, expect="is too small"),
        case("train_port_large", ["train", "--master-port", "70000"], 2, expect="is too large"),
        case("train_node_rank_negative", ["train", "--node-rank=-1"], 2, expect="is too small"),
        case("train_max_memory_text", ["train", "--max-memory", "lots"], 2),
        case("train_unknown_flag", ["train", "--sett", "a=b"], 2, expect="did you mean"),
        case("train_setting_as_flag", ["train", "--epochs", "5"], 2, expect="--set train.epochs=5"),
        case("train_hugging_face_flag", ["train", "--learning_rate=3e-4"], 2, expect="Hugging Face's --learning_rate is optimizer.lr here"),
        case("profile_setting_as_flag", ["profile", "--batch-size", "64"], 2, expect="--set train.batch_size=64"),
        case("train_config_as_a_flag", ["train", "--config", "c.yaml"], 2, {"c.yaml": "train: {epochs: 1}\n"},
             expect="the config is the first argument, with no flag before it: gputrain train c.yaml"),
        case("train_resume_as_a_switch", ["train", "c.yaml", "--resume"], 2, {"c.yaml": "train: {epochs: 1}\n"},
             expect="a run resumes by itself (checkpoint.resume: auto)"),
        case("train_help_as_a_word", ["train", "help"], 2, expect="for the options and examples, --help: gputrain train --help"),
        case("lightning_fit_command", ["fit", "c.yaml"], 2, expect="gputrain train CONFIG.yaml (Lightning's fit)"),
        case("version_command", ["version"], 2, expect="gputrain --version"),
        case("train_dry_run", ["train", "c.yaml", "--dry-run"], 2, {"c.yaml": "train: {epochs: 1}\n"}, expect="did you mean '--print-config'?"),
        case("train_json_without_evaluate", ["train", "--json"], 2),
        case("train_print_config_with_evaluate", ["train", "--set", "device=cpu", "--evaluate", "w.safetensors", "--print-config"], 2,
             expect="--print-config excludes --evaluate"),
        case("train_evaluate_missing", ["train", "--set", "device=cpu", "--evaluate", "nope.safetensors"], 2, expect="does not exist"),
        # An empty value (`--evaluate "$WEIGHTS"`, WEIGHTS unset) was taken as no option: that one trained instead.
        case("train_evaluate_empty", ["train", "--set", "device=cpu", "--evaluate", ""], 2,
             expect="--evaluate: the value is empty (an unset shell variable?): give a weights file"),
        case("train_config_empty", ["train", ""], 2, expect="config: the value is empty"),
        case("train_master_addr_empty", ["train", "--set", "device=cpu", "--master-addr", ""], 2, expect="--master-addr: the value is empty"),
        case("profile_trace_empty", ["profile", "--trace", ""], 2, expect="--trace: the value is empty (an unset shell variable?): give a file name"),
        case("profile_path_empty", ["profile", "--path", ""], 2, expect="--path: the value is empty"),
        case("profile_workers_negative", ["profile", "--workers", "-1"], 2, expect="is too small"),
        case("profile_workers_beyond_threads", ["profile", "--workers", "2147483648"], 2, expect="from 0 to 1024"),
        case("profile_repeats_zero", ["profile", "--repeats", "0"], 2, expect="is too small"),
        case("profile_batches_text", ["profile", "--batches", "many"], 2, expect="is not a whole number"),
        case("profile_steps_one", ["profile", "--steps", "1"], 2, expect="is too small"),
        case("verify_level_typo", ["verify", "--level", "ful"], 2, expect="did you mean"),
        case("verify_junit_is_a_folder", ["verify", "--allow-cpu", "--junit", "."], 2, expect="is a folder: give a file in it"),
        case("quick_junit_is_a_folder", ["quick-train", "--allow-cpu", "--junit", "."], 2, expect="is a folder: give a file in it"),
        # An output path under a file: refused before the checks or steps run, not after them.
        case("verify_junit_under_a_file", ["verify", "--allow-cpu", "--junit", "good.csv/j.xml"], 2, {"good.csv": GOOD_CSV},
             expect="--junit: 'good.csv' cannot be created: 'good.csv' is a file"),
        case("quick_junit_under_a_file", ["quick-train", "--allow-cpu", "--junit", "good.csv/j.xml"], 2, {"good.csv": GOOD_CSV},
             expect="--junit: 'good.csv' cannot be created: 'good.csv' is a file"),
        case("quick_junit_value_left_out", ["quick-train", "--allow-cpu", "--junit", "--json"], 2,
             expect="--junit: '--json' is an option, not a file: give a file name, e.g. report.xml"),
        # CLI11's "--nnodes: 1 required N:from 1 to 100000 missing" and "--precision: --json not in {...}".
        case("train_last_option_without_value", ["train", "c.yaml", "--nnodes"], 2, {"c.yaml": config(), "good.csv": GOOD_CSV},
             expect="--nnodes was given no value (it ends the command line): it takes a number from 1 to 100000"),
        case("quick_choice_value_left_out", ["quick-train", "--precision", "--json"], 2,
             expect="'--json' is the next option, not --precision's value: --precision takes one of fp32, fp16-mixed, bf16-mixed"),
        # The value left out, the next option taken as it: --print-config was not done and a run trained.
        case("train_master_addr_value_left_out", ["train", "c.yaml", "--master-addr", "--print-config"], 2,
             {"c.yaml": config(), "good.csv": GOOD_CSV},
             expect="--master-addr: '--print-config' is the next option, not this one's value: give node 0's host name"),
        case("train_evaluate_value_left_out", ["train", "c.yaml", "--evaluate", "--json"], 2, {"c.yaml": config(), "good.csv": GOOD_CSV},
             expect="--evaluate: '--json' is the next option, not this one's value: give a weights file"),
        case("profile_path_value_left_out", ["profile", "--path", "--json"], 2,
             expect="--path: '--json' is the next option, not this one's value: give the data's file or folder"),
        case("profile_trace_is_a_folder", ["profile", "--trace", "."], 2, expect="is a folder: give a file in it"),
        # The option took the argument after it, the config: the trace or the report went over it.
        case("profile_trace_over_the_config", ["profile", "--step", "--trace", "c.yaml", "c.yaml"], 2,
             {"c.yaml": config(), "good.csv": GOOD_CSV}, expect="--trace: 'c.yaml' is a file that is not a trace (it starts 'model:')"),
        case("verify_junit_over_the_config", ["verify", "--allow-cpu", "--junit", "c.yaml"], 2, {"c.yaml": config()},
             expect="--junit: 'c.yaml' is a file that is not a JUnit report (it starts 'model:')"),
        case("profile_trace_under_a_file", ["profile", "--trace", "good.csv/t.json", "--path", "good.csv", "--labels", "label"], 2,
             {"good.csv": GOOD_CSV}, expect="--trace: 'good.csv' cannot be created: 'good.csv' is a file"),
        case("profile_plot_under_a_file", ["profile", "--plot", "good.csv/l.svg", "--path", "good.csv", "--labels", "label"], 2,
             {"good.csv": GOOD_CSV}, expect="--plot: 'good.csv' cannot be created: 'good.csv' is a file"),
        train_case("train_profile_dir_under_a_file", config(train="  epochs: 1\n  profile: {start_step: 1, dir: good.csv/p}\n"),
                   expect="train.profile.dir: 'good.csv/p' cannot be created: 'good.csv' is a file"),
        # A config from a pipe or device gives its text once: ranks that read it again got nothing and trained the defaults.
        case("config_device_with_ranks", ["train", "/dev/null", "--set", "device=cpu", "--nproc-per-node", "2"], 2,
             expect="config file '/dev/null' is a pipe or a device, which gives its text once, and the ranks this command starts"),
        case("config_device_as_a_rank", ["train", "/dev/null", "--set", "device=cpu"], 2,
             env={"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": "29500"},
             expect="and each of the 2 ranks reads it itself"),
        case("unknown_command", ["trian"], 2),
        case("log_level_typo", ["train", "--log-level", "verbose"], 2),
        case("env_twin_verify_level", ["verify", "--allow-cpu"], 2, env={"GPUTRAIN_VERIFY_LEVEL": "ful"},
             expect="GPUTRAIN_VERIFY_LEVEL=ful (the environment's twin of --level): ful not in {quick,full}"),
        case("env_twin_quick_device", ["quick-train"], 2, env={"GPUTRAIN_DEVICE": "tpu"},
             expect="GPUTRAIN_DEVICE=tpu (the environment's twin of --device)"),
        case("env_twin_allow_cpu", ["verify"], 2, env={"GPUTRAIN_ALLOW_CPU": "maybe"},
             expect="GPUTRAIN_ALLOW_CPU=maybe (the environment's twin of --allow-cpu): not a yes or no"),
        # gputrain's own switches (docs/troubleshooting.md): a mistyped one is refused, not read as unset.
        case("env_switch_cpu_cache", ["train", "c.yaml", "--set", "device=cpu", "--set", "logging.dir=run"], 2,
             {"good.csv": GOOD_CSV, "c.yaml": config()}, env={"GPUTRAIN_CPU_CACHE": "off"},
             expect="GPUTRAIN_CPU_CACHE=off is not a value it takes (0, 1; unset: 1, the block cache on)"),
        case("env_switch_batch_norm", ["train", "c.yaml", "--set", "device=cpu", "--set", "logging.dir=run"], 2,
             {"good.csv": GOOD_CSV, "c.yaml": config(model="  name: small_cnn\n", data="  source: synthetic\n  shape: [1, 8, 8]\n  samples: 32\n")},
             env={"GPUTRAIN_BATCH_NORM": "Aten"}, expect="did you mean 'aten'?"),
    ]
    return cases


def outcome_cases():
    """The codes that are not usage: an unusable environment (3), a failed check (1)."""
    return [
        train_case("environment_cuda_without_gpu", config(), exit=3, extra_args=["--set", "device=cuda"], expect="no CUDA GPU"),
        case("environment_quick_train_without_gpu", ["quick-train"], 3, expect="no GPU", style="check"),
        case("failure_quick_train_batch_beyond_memory", ["quick-train", "--allow-cpu", "--batch-size", "1000000000"], 1,
             expect="for its inputs alone", style="check"),
    ]


def all_cases():
    return config_cases() + data_cases() + checkpoint_cases() + flag_cases() + outcome_cases()
