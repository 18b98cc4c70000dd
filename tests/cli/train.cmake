# `gputrain train` on one process: its flags, signals, what Python's readers make of its files,
# examples, predictions and PostgreSQL loads; included by tests/cli/CMakeLists.txt.
set(train_checker ${CMAKE_CURRENT_SOURCE_DIR}/check_train.py)
set(quickstart ${PROJECT_SOURCE_DIR}/configs/quickstart.yaml)
set(train_work ${CMAKE_CURRENT_BINARY_DIR}/train)
# An allocation the process cannot get (a 6 GB address-space limit here, 9.8 GB of synthetic data)
# ends with LibTorch's message, not with the C++ frames LibTorch appends to it.
add_test(NAME cli.train_allocation_failure_has_no_backtrace
         COMMAND sh -c "ulimit -v 6000000; exec \"$0\" train \"$1\" --set data.samples=800000 --set train.max_steps=1 --set logging.dir=\"$2\""
                 ${front} ${quickstart} ${train_work}/allocation-failure)
set_tests_properties(cli.train_allocation_failure_has_no_backtrace PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "error: " FAIL_REGULAR_EXPRESSION "frame #")
# AddressSanitizer and ThreadSanitizer reserve terabytes of shadow address space, which the ulimit
# above refuses.
if(GPUTRAIN_SANITIZE MATCHES "address|thread")
  set_tests_properties(cli.train_allocation_failure_has_no_backtrace PROPERTIES DISABLED TRUE)
endif()
# A bare `gputrain train` says how to start instead of training on the defaults; a mistyped option
# or command gets the one meant.
add_test(NAME cli.train_without_config_is_usage_error
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} train)
set_tests_properties(cli.train_without_config_is_usage_error PROPERTIES LABELS cli)
add_test(NAME cli.train_without_config_says_how
         COMMAND ${front} train)
set_tests_properties(cli.train_without_config_says_how PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "try gputrain train configs/quickstart.yaml")
add_test(NAME cli.mistyped_option_gets_the_one_meant COMMAND ${front} train configs/quickstart.yaml --sett x=1)
set_tests_properties(cli.mistyped_option_gets_the_one_meant PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "not expected: --sett.*fix: did you mean '--set'")
add_test(NAME cli.mistyped_command_gets_the_one_meant COMMAND ${front} trian)
set_tests_properties(cli.mistyped_command_gets_the_one_meant PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "did you mean 'train'")
# No config: data.path alone says the format (npy), as train --help shows.
add_test(NAME cli.train_npy_without_config_or_source
         COMMAND ${front} train --set data.path=${format_fixtures}/npz/x.npy --set data.labels=${format_fixtures}/npz/y.npy
                 --set train.epochs=2 --set device=cpu --set checkpoint.resume=never --set logging.dir=${train_work}/npy-without-source)
set_tests_properties(cli.train_npy_without_config_or_source PROPERTIES LABELS cli FIXTURES_REQUIRED format_fixtures
                     PASS_REGULAR_EXPRESSION "data: npy x.npy \\(50 samples\\).*done: 2 steps")
add_test(NAME cli.train_help COMMAND ${front} train --help)
set_tests_properties(cli.train_help PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "--print-config")
add_test(NAME cli.train_print_config COMMAND ${front} train ${quickstart} --set train.epochs=9 --print-config)
set_tests_properties(cli.train_print_config PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "train:\n  epochs: 9\n")
add_test(NAME cli.train_config_error_is_exit_2
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} train ${quickstart} --set train.lr=0.1)
add_test(NAME cli.train_missing_file_is_exit_2
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} train /no/such/config.yaml)
# A broken data file stops the run before it starts, naming the file (exit 2).
add_test(NAME cli.train_truncated_data_file_is_exit_2
         COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set data.source=npy
                 --set data.path=${format_fixtures}/bad/truncated.npy --set data.labels=${format_fixtures}/npz/y.npy
                 --set logging.dir=${train_work}/truncated)
set_tests_properties(cli.train_truncated_data_file_is_exit_2 PROPERTIES LABELS cli FIXTURES_REQUIRED format_fixtures
  PASS_REGULAR_EXPRESSION "bad/truncated.npy' is not a valid .npy array: it is truncated")
add_test(NAME cli.train_truncated_data_file_exit_code
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml
                 --set data.source=npy --set data.path=${format_fixtures}/bad/truncated.npy
                 --set data.labels=${format_fixtures}/npz/y.npy --set logging.dir=${train_work}/truncated)
set_tests_properties(cli.train_truncated_data_file_exit_code PROPERTIES LABELS cli FIXTURES_REQUIRED format_fixtures)
add_test(NAME cli.train_sigterm_checkpoints_and_resumes
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} sigterm ${train_work}/sigterm -- ${front} train ${quickstart})
add_test(NAME cli.train_hangup_checkpoints
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} hangup ${train_work}/hangup -- ${front} train ${quickstart})
add_test(NAME cli.train_scheduler_signal_checkpoints
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} scheduler-signal ${train_work}/scheduler-signal -- ${front} train ${quickstart})
add_test(NAME cli.train_outputs_read_back_by_python
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} readback ${train_work}/readback -- ${front} train)
# The weights file alone is enough to predict from Python: docs/examples/predict.py reproduces the
# run's own validation figures.
add_test(NAME cli.predict_example_reproduces_the_runs_val_figures
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} predict ${train_work}/predict -- ${front} train)
# ... for image models too: the same samples of the files (Pillow's resize), the same network.
add_test(NAME cli.predict_example_reproduces_an_image_runs_val_figures
         COMMAND ${GPUTRAIN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_predict_images.py ${train_work}/predict-images -- ${front} train)
set_tests_properties(cli.predict_example_reproduces_an_image_runs_val_figures PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}")
# --evaluate: best.pt gives its epoch's figures again; a test file gives what predict.py gives.
add_test(NAME cli.train_evaluate_gives_the_runs_figures_and_predict_pys
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} evaluate ${train_work}/evaluate -- ${front} train)
# Text that is not UTF-8 (an Excel CSV, a Latin-1 folder or path) trains and keeps its weights.
add_test(NAME cli.train_text_not_utf8_is_read_as_windows_1252
         COMMAND ${GPUTRAIN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_text_encoding.py ${train_work}/text-encoding -- ${front} train)
set_tests_properties(cli.train_text_not_utf8_is_read_as_windows_1252 PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}")
# Names from data (a CSV's class names and cells) print as escapes, never as terminal control.
add_test(NAME cli.train_names_from_data_print_no_terminal_control
         COMMAND ${GPUTRAIN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_control_characters.py ${train_work}/control-characters -- ${front} train)
set_tests_properties(cli.train_names_from_data_print_no_terminal_control PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}")
# scheduler: plateau against PyTorch's ReduceLROnPlateau, given the run's own validation figures.
add_test(NAME cli.train_plateau_matches_pytorchs_reduce_lr_on_plateau
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} plateau ${train_work}/plateau -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
set_tests_properties(cli.train_plateau_matches_pytorchs_reduce_lr_on_plateau PROPERTIES LABELS cli)
add_test(NAME cli.train_auto_batch_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${train_work}/auto-batch)
set_tests_properties(cli.train_auto_batch_clean PROPERTIES LABELS cli FIXTURES_SETUP auto_batch_dir)
add_test(NAME cli.train_auto_batch_under_a_cap
         COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set train.batch_size=auto
                 --set train.epochs=1 --set logging.progress=lines --set logging.dir=${train_work}/auto-batch
                 --set checkpoint.resume=never --max-memory 48MiB)
set_tests_properties(cli.train_auto_batch_under_a_cap PROPERTIES LABELS cli FIXTURES_REQUIRED auto_batch_dir
  PASS_REGULAR_EXPRESSION "batch_size auto: [0-9]+ after [1-4] probe steps in [0-9.]+ s: [0-9]+% of the")
add_test(NAME cli.train_data_over_the_cap_is_exit_1
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 1 --
                 ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set logging.dir=${train_work}/over-cap --max-memory 1MiB)
# channels_last: auto says what it chose for a convolutional model.
add_test(NAME cli.train_channels_last_auto_is_reported
         COMMAND ${front} train ${quickstart} --set train.max_steps=1 --set train.batch_size=2 --set data.samples=4
                 --set data.val_samples=0 --set logging.dir=${train_work}/channels-last --set checkpoint.resume=never)
set_tests_properties(cli.train_channels_last_auto_is_reported PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}"
  PASS_REGULAR_EXPRESSION "train.channels_last auto: on \\(NHWC for small_cnn's convolutions\\)")
# The quick start learns: its synthetic task is one a small CNN that pools over positions can learn
# (ten equally frequent classes, so chance is 10%; it reaches ~46% in its 4 epochs).
add_test(NAME cli.train_quickstart_learns
         COMMAND ${front} train ${quickstart} --set logging.dir=${train_work}/quickstart-learns --set checkpoint.resume=never)
set_tests_properties(cli.train_quickstart_learns PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}"
  PASS_REGULAR_EXPRESSION "done: 512 steps in [0-9:]+, final loss [0-9.]+, val accuracy [3-9][0-9]\\.[0-9]+%")
# A run that train.max_steps ends inside an epoch says its last validation is older than its weights.
add_test(NAME cli.train_max_steps_inside_an_epoch_says_validation_is_older
         COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set train.max_steps=80
                 --set logging.dir=${train_work}/max-steps-inside --set checkpoint.resume=never)
set_tests_properties(cli.train_max_steps_inside_an_epoch_says_validation_is_older PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "val accuracy [0-9.]+% \\(at the end of epoch 1\\), [^\n]*\n  validation: train.max_steps ended the run 16 of 64 steps into epoch 2, before that epoch's validation")
# A regression run ends with its validation MSE and MAE, as a classification run ends with its accuracy.
add_test(NAME cli.train_regression_done_line_has_val_mse_and_mae
         COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/regression-mlp.yaml --set device=cpu --set train.epochs=1
                 --set logging.dir=${train_work}/regression-done --set checkpoint.resume=never)
set_tests_properties(cli.train_regression_done_line_has_val_mse_and_mae PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "done: 64 steps in [0-9:]+, final loss [0-9.]+, val mse 0\\.0[0-9]+, val mae 0\\.[0-9]+, ")
# A bad size from the environment names the variable, not a --set the user never typed.
add_test(NAME cli.train_bad_max_memory_from_the_environment_names_it
         COMMAND ${CMAKE_COMMAND} -E env GPUTRAIN_MAX_MEMORY=lots ${front} train --print-config)
set_tests_properties(cli.train_bad_max_memory_from_the_environment_names_it PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "error: --max-memory/GPUTRAIN_MAX_MEMORY lots: device.max_memory: found 'lots'")
# A key the chosen optimizer does not read is named before the run, not silently ignored.
add_test(NAME cli.train_names_a_setting_nothing_reads
         COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/quickstart.yaml --set device=cpu --set train.max_steps=1
                 --set optimizer.name=adamw --set optimizer.momentum=0.5
                 --set logging.dir=${train_work}/unread --set checkpoint.resume=never)
set_tests_properties(cli.train_names_a_setting_nothing_reads PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "note: optimizer.momentum is 0.5, but adamw does not read it \\(only sgd does\\)")
add_test(NAME cli.train_divergence_stops_before_a_broken_checkpoint
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} diverge ${train_work}/diverge -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
set_tests_properties(cli.train_divergence_stops_before_a_broken_checkpoint PROPERTIES LABELS cli)
# An epoch whose last pass would hold one sample (3 samples in batches of 2), which small_cnn's
# batch norm over 1x1 maps cannot take: the sample is left out, said once, and the run trains on
# (it failed at the first epoch's end; a LibTorch error in a step: StepFailures.*).
add_test(NAME cli.train_leaves_out_a_lone_sample_batch_norm_cannot_take
         COMMAND ${front} train ${quickstart} --set data.shape=[3,4,4] --set data.samples=3 --set data.val_samples=0
                 --set train.batch_size=2 --set logging.dir=${train_work}/lone-sample --set checkpoint.resume=never)
set_tests_properties(cli.train_leaves_out_a_lone_sample_batch_norm_cannot_take PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}"
  PASS_REGULAR_EXPRESSION "note: each epoch would end on a pass of one sample \\(3 training samples in steps of 2\\), which small_cnn's batch norm cannot normalise.*that sample is left out of each epoch.*done: 4 steps"
  FAIL_REGULAR_EXPRESSION "error:;FAIL:;frame #;Exception raised from")
# A run an error ends inside its train.profile window writes the trace of the steps it took, and
# exits 1: the profiler left on crashed the process's exit (SIGSEGV).
add_test(NAME cli.train_failed_inside_the_trace_window_writes_it
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 1 --
                 ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set optimizer.lr=1e30 --set train.profile.start_step=2
                 --set train.profile.steps=2 --set logging.every_steps=1 --set logging.dir=${train_work}/failed-trace
                 --set checkpoint.resume=never)
set_tests_properties(cli.train_failed_inside_the_trace_window_writes_it PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}"
  PASS_REGULAR_EXPRESSION "profiler trace of steps 2-2: [^\n]*failed-trace/traces/trace-step2.json.*error: training diverged"
  FAIL_REGULAR_EXPRESSION "FAIL:")
add_test(NAME cli.train_cpu_block_cache
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} cpu-cache ${train_work}/cpu-cache -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
set_tests_properties(cli.train_cpu_block_cache PROPERTIES LABELS cli)
add_test(NAME cli.train_torchscript_model
         COMMAND ${GPUTRAIN_PYTHON} ${train_checker} torchscript ${train_work}/torchscript -- ${front} train)
set_tests_properties(cli.train_config_error_is_exit_2 cli.train_missing_file_is_exit_2
  cli.train_sigterm_checkpoints_and_resumes cli.train_hangup_checkpoints cli.train_scheduler_signal_checkpoints cli.train_outputs_read_back_by_python cli.train_torchscript_model
  cli.predict_example_reproduces_the_runs_val_figures
  PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}" SKIP_RETURN_CODE 77)

# Every ready config validates and trains, shortened to a couple of small steps.
file(GLOB ready_configs ${PROJECT_SOURCE_DIR}/configs/*.yaml)
foreach(config ${ready_configs})
  get_filename_component(name ${config} NAME_WE)
  # ImageNet-sized images are shrunk too: a CPU does one 224x224 ResNet-50 fp16 step in ~20 s.
  # ResNet-50's stem and stages take a 32x32 image down to 1x1: still the whole network.
  set(extra "")
  if(name MATCHES "imagenet")
    set(extra --set data.shape=[3,32,32])
  endif()
  # Configs that read files train on the fixtures numpy/Pillow wrote (tests/data/formats).
  if(name STREQUAL "cifar10")
    set(extra --set data.path=${format_fixtures}/cifar)
  elseif(name STREQUAL "image-folder")
    set(extra --set data.path=${format_fixtures}/folder/train --set data.val_path=${format_fixtures}/folder/val
              --set data.image_size=[32,32] --set train.max_batch_size=4)
  endif()
  set(command ${front} train ${config} --set train.max_steps=2 --set train.batch_size=2 --set data.samples=8
              --set data.val_samples=4 --set logging.dir=${train_work}/configs/${name} --set checkpoint.resume=never ${extra})
  if(name STREQUAL "postgres")  # its table, made by docs/examples/postgres_sample.sh on the test server
    if(NOT GPUTRAIN_HAVE_POSTGRES)
      continue()
    endif()
    add_test(NAME cli.config.${name}
             COMMAND ${GPUTRAIN_PYTHON} ${PROJECT_SOURCE_DIR}/tests/postgres/run_with_server.py ${pg_dir} -- ${command})
    set_tests_properties(cli.config.${name} PROPERTIES LABELS "cli;postgres" ENVIRONMENT "${no_gpu_env}" FIXTURES_REQUIRED postgres_server
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK gputrain_samples)
    continue()
  endif()
  add_test(NAME cli.config.${name} COMMAND ${command})
  set_tests_properties(cli.config.${name} PROPERTIES LABELS cli ENVIRONMENT "${no_gpu_env}" FIXTURES_REQUIRED format_fixtures)
endforeach()

# profile on data.source postgres: the load timed against the server's raw COPY of the query,
# and what it read over (the same table as cli.config.postgres, remade by each: one at a time).
if(GPUTRAIN_HAVE_POSTGRES)
  add_test(NAME cli.profile_postgres_load_against_the_raw_copy
           COMMAND ${GPUTRAIN_PYTHON} ${PROJECT_SOURCE_DIR}/tests/postgres/run_with_server.py ${pg_dir} -- ${front} profile
                   ${PROJECT_SOURCE_DIR}/configs/postgres.yaml --set data.val_query=null --set data.streams=2 --set device=cpu)
  set_tests_properties(cli.profile_postgres_load_against_the_raw_copy PROPERTIES LABELS "cli;postgres" ENVIRONMENT "${no_gpu_env}"
    FIXTURES_REQUIRED postgres_server SKIP_RETURN_CODE 77 RESOURCE_LOCK gputrain_samples
    PASS_REGULAR_EXPRESSION "PostgreSQL load: 8000 rows in .*\nraw COPY of data.query: 8000 rows.*\nthe load runs at [0-9]+ % of the raw COPY's throughput \\(the load read over 2 COPY streams, the raw COPY over one\\)")
endif()
