# `gputrain profile`: its modes (--memory, --batch, --step, --source), their JSON and the figures
# they print, on the CPU; included by tests/cli/CMakeLists.txt.
add_test(NAME cli.profile_help COMMAND ${front} profile --help)
set_tests_properties(cli.profile_help PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "sweep the data loader")
add_test(NAME cli.profile_one_mode_at_a_time
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} profile --memory --step ${PROJECT_SOURCE_DIR}/configs/quickstart.yaml)
add_test(NAME cli.profile_needs_data
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} profile)
# The search's probes run out of memory, then the exhaustive check builds its own model: it once
# found memory the failed probes had left on the main thread (exit 1, "CPU out of memory").
add_test(NAME cli.profile_exhaustive_after_probes_ran_out
         COMMAND ${front} profile --batch --exhaustive --max-memory 512MiB ${CMAKE_CURRENT_SOURCE_DIR}/resnet50_under_512mib.yaml
                 --set device=cpu)
set_tests_properties(cli.profile_exhaustive_after_probes_ran_out PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "exhaustive check: the largest batch that fits is [1-9]")
# A training step that runs out of memory on the CPU is split once: the failed attempt's thread
# takes what it left with it (it was split down to 1: each failure left memory on the loop's thread).
add_test(NAME cli.train_cpu_oom_split_finds_the_room_it_left
         COMMAND ${front} train ${CMAKE_CURRENT_SOURCE_DIR}/resnet50_under_512mib.yaml --set device=cpu --set device.max_memory=512MiB
                 --set train.batch_size=8 --set data.samples=64 --set train.max_steps=4 --set checkpoint.resume=never
                 --set logging.dir=${CMAKE_CURRENT_BINARY_DIR}/train-cpu-oom-split)
set_tests_properties(cli.train_cpu_oom_split_finds_the_room_it_left PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "1 out-of-memory events? survived \\(micro-batch 8 -> 4\\)")
set(profile_checker ${CMAKE_CURRENT_SOURCE_DIR}/check_profile.py)
# No --source: the format is told from the path.
add_test(NAME cli.profile_loader_sweep_json
         COMMAND ${GPUTRAIN_PYTHON} ${profile_checker} sweep-json "npy x.npy" -- ${front} profile --json --repeats 3 --batches 10
                 --path ${format_fixtures}/npz/x.npy --labels ${format_fixtures}/npz/y.npy --set train.batch_size=8)
# --path and --labels are taken as written: YAML would cut this name at " #" or read ": " as a mapping.
add_test(NAME cli.profile_flags_keep_odd_paths_and_take_several_labels
         COMMAND ${GPUTRAIN_PYTHON} ${profile_checker} sweep-json
                 "CSV ${format_fixtures}/csv/run #2: numeric.csv (12 samples; features a, b; labels y1, y2)"
                 -- ${front} profile --json --repeats 1 --batches 2 --path "${format_fixtures}/csv/run #2: numeric.csv"
                 --labels y1 y2 --set data.task=regression --set train.batch_size=4)
# --labels takes every word up to the next option: a config after it is named, not lost.
add_test(NAME cli.profile_labels_swallowing_the_config_says_so
         COMMAND ${front} profile --labels y ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
set_tests_properties(cli.profile_labels_swallowing_the_config_says_so PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "--labels took the config file '[^']*mlp.yaml' as a label\n  fix: put the config first")
# A --path that does not exist is named as such (not "cannot tell the format"), with a near miss.
add_test(NAME cli.profile_missing_path_says_it_does_not_exist
         COMMAND ${front} profile --path ${format_fixtures}/npz/x.np)
set_tests_properties(cli.profile_missing_path_says_it_does_not_exist PROPERTIES LABELS cli FIXTURES_REQUIRED format_fixtures
                     PASS_REGULAR_EXPRESSION "x.np' does not exist \\(did you mean '[^']*x.npy'\\?\\)")
add_test(NAME cli.profile_path_of_unknown_format_is_usage_error
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} profile --path ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
add_test(NAME cli.profile_loader_sweep_images_csv_and_plot
         COMMAND ${GPUTRAIN_PYTHON} ${profile_checker} sweep-csv ${CMAKE_CURRENT_BINARY_DIR}/loader.svg -- ${front} profile --csv
                 --repeats 2 --batches 5 --source image_folder --path ${format_fixtures}/folder/train
                 --set data.image_size=[32,32] --set train.batch_size=2)
add_test(NAME cli.profile_plot_png
         COMMAND ${GPUTRAIN_PYTHON} ${profile_checker} plot-png ${CMAKE_CURRENT_BINARY_DIR}/loader.png -- ${front} profile --repeats 1
                 --batches 3 --source npy --path ${format_fixtures}/npz/x.npy --labels ${format_fixtures}/npz/y.npy)
add_test(NAME cli.profile_plot_must_be_svg_or_png
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} profile --plot chart.gif --source npy
                 --path ${format_fixtures}/npz/x.npy --labels ${format_fixtures}/npz/y.npy)
# The config's train.max_time is for training: the measured steps all run (no steps ran otherwise).
# Its train.profile trace window is for training too: nothing written into its folder.
add_test(NAME cli.profile_step_json
         COMMAND ${GPUTRAIN_PYTHON} ${profile_checker} step-json ${CMAKE_CURRENT_BINARY_DIR}/profile-step-checkpoints --
                 ${front} profile --step --steps 6 --json ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu
                 --set data.samples=512 --set data.cache=none --set checkpoint.dir=${CMAKE_CURRENT_BINARY_DIR}/profile-step-checkpoints
                 --set train.max_time=0.001s --set train.profile.start_step=2
                 --set train.profile.dir=${CMAKE_CURRENT_BINARY_DIR}/profile-step-checkpoints)
set_tests_properties(cli.profile_loader_sweep_json cli.profile_flags_keep_odd_paths_and_take_several_labels
                     cli.profile_loader_sweep_images_csv_and_plot cli.profile_plot_must_be_svg_or_png
                     cli.profile_plot_png
                     PROPERTIES LABELS cli FIXTURES_REQUIRED format_fixtures)
# --trace's steps come after the operator-counted ones, and are not counted.
add_test(NAME cli.profile_step_counts_ignore_the_traced_steps
         COMMAND ${GPUTRAIN_PYTHON} ${profile_checker} step-trace-counts -- ${front} profile --step --steps 4
                 ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set data.samples=512)
# --trace: a Chrome Trace Format file with gputrain's ranges (#51).
add_test(NAME cli.profile_trace_is_chrome_trace_format
         COMMAND ${GPUTRAIN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py ${CMAKE_CURRENT_BINARY_DIR}/profile-trace/trace.json --
                 ${front} profile --steps 4 ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set data.samples=512)
set_tests_properties(cli.profile_step_json cli.profile_one_mode_at_a_time cli.profile_needs_data cli.profile_trace_is_chrome_trace_format
                     cli.profile_step_counts_ignore_the_traced_steps PROPERTIES LABELS cli)
set_tests_properties(cli.profile_path_of_unknown_format_is_usage_error PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "cannot tell the format of [^\n]*mlp.yaml" FAIL_REGULAR_EXPRESSION "FAIL:")
add_test(NAME cli.profile_memory_table
         COMMAND ${front} profile --memory ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set data.samples=512 --set device=cpu)
set_tests_properties(cli.profile_memory_table PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "optimizer state +1\\.0[0-9] MiB   sgd: one momentum buffer")
# A model whose parameters and optimizer state alone pass the cap: said before any probe step, with
# the figures and the fix (LibTorch's allocator message alone, no fix, exit 1, before).
add_test(NAME cli.profile_memory_of_a_model_that_cannot_fit
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 1 --
                 ${front} profile --memory ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set model.hidden=[4096,4096]
                 --set data.samples=512 --max-memory 40MiB)
set_tests_properties(cli.profile_memory_of_a_model_that_cannot_fit PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "error: out of memory before any probe step: the model and its optimizer state do not fit on cpu: [^\n]*limit 40.00 MiB.*fix: allow more memory"
  FAIL_REGULAR_EXPRESSION "FAIL:")
# On the CPU the model is fitted to allocated bytes (reserved ones exist on CUDA only).
add_test(NAME cli.profile_memory_json_says_which_bytes_it_fitted
         COMMAND ${front} profile --memory --json ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --max-memory 48MiB)
set_tests_properties(cli.profile_memory_json_says_which_bytes_it_fitted PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"fitted_to_reserved_bytes\": false,")
add_test(NAME cli.profile_batch_under_a_cap
         COMMAND ${front} profile --batch --json ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --max-memory 48MiB)
set_tests_properties(cli.profile_batch_under_a_cap PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"memory_probe_steps\": [1-4],")
# Each JSON document names its schema.
add_test(NAME cli.profile_memory_json_names_its_schema
         COMMAND ${front} profile --memory --json ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --max-memory 48MiB)
add_test(NAME cli.profile_batch_json_names_its_schema
         COMMAND ${front} profile --batch --json ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --max-memory 48MiB)
set_tests_properties(cli.profile_memory_json_names_its_schema PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"schema\": \"gputrain.profile.memory/1\"")
set_tests_properties(cli.profile_batch_json_names_its_schema PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"schema\": \"gputrain.profile.batch/1\"")
# --json keeps its promise on failure: the error as JSON on stdout, as verify's.
add_test(NAME cli.profile_json_error_is_json
         COMMAND ${front} profile --memory --json no-such-config.yaml)
set_tests_properties(cli.profile_json_error_is_json PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"error\": \"config file 'no-such-config.yaml' does not exist[^}]*\"exit_code\": 2,[^}]*\"schema\": \"gputrain.profile.memory/1\"")
# The whole of a small set fits: the batch found leaves one step an epoch, which it says, with the cap.
add_test(NAME cli.profile_batch_of_the_whole_set_says_so
         COMMAND ${front} profile --batch ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set data.samples=512)
set_tests_properties(cli.profile_batch_of_the_whole_set_says_so PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "note: batch_size auto: 512 leaves 1 step per epoch[^\n]*train.max_batch_size \\(e.g. 16\\)")
add_test(NAME cli.profile_does_not_fit_is_exit_1
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 1 --
                 ${front} profile --batch ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --max-memory 1MiB)
set_tests_properties(cli.profile_does_not_fit_is_exit_1
  PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}")
