# `gputrain train` on several ranks: under mpirun, over Gloo without it, and as a node's
# launcher; included by tests/cli/CMakeLists.txt.
if(GPUTRAIN_HAVE_MPI)
  set(launcher_checker ${CMAKE_CURRENT_SOURCE_DIR}/check_launcher.py)
  foreach(mode ok kill-rank kill-launcher sigterm early-stop max-time uneven-epoch setup-error)
    add_test(NAME cli.train_nproc_per_node_${mode}
             COMMAND ${GPUTRAIN_PYTHON} ${launcher_checker} ${mode} ${train_work}/launch-${mode} -- ${front} train
                     ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
    set_tests_properties(cli.train_nproc_per_node_${mode} PROPERTIES LABELS "cli;dist" TIMEOUT 600
                         ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${no_gpu_env}")
  endforeach()
  # Ranks that read other rows of one query (here a query that gives other values each time, as a
  # table changed between the ranks' reads would) are refused before training, naming the checksums.
  if(GPUTRAIN_HAVE_POSTGRES)
    add_test(NAME cli.train_nproc_per_node_ranks_reading_other_rows
             COMMAND ${GPUTRAIN_PYTHON} ${PROJECT_SOURCE_DIR}/tests/postgres/run_with_server.py ${pg_dir} -- ${front} train
                     ${PROJECT_SOURCE_DIR}/configs/postgres.yaml --set device=cpu --nproc-per-node 2 --set data.val_query=null
                     "--set=data.query=SELECT f1 + random() AS f1, label FROM gputrain_samples WHERE split = 'train'"
                     --set logging.dir=${train_work}/launch-other-rows)
    set_tests_properties(cli.train_nproc_per_node_ranks_reading_other_rows PROPERTIES LABELS "cli;dist;postgres" TIMEOUT 300
      FIXTURES_REQUIRED postgres_server RESOURCE_LOCK gputrain_samples SKIP_RETURN_CODE 77
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${no_gpu_env}"
      PASS_REGULAR_EXPRESSION "the ranks read different data \\(training rows' checksums: rank 0's and rank 1's differ")
  endif()
  # The sharded-optimizer benchmark runs end to end (its figures are docs/benchmarks.md's).
  add_test(NAME bench.sharded_optimizer_runs
           COMMAND ${CMAKE_COMMAND} -E env GPUTRAIN_BUILD=${PROJECT_BINARY_DIR}
                   ${GPUTRAIN_PYTHON} ${PROJECT_SOURCE_DIR}/bench/sharded_optimizer.py --runs 1 --steps 3 --batch 16)
  set_tests_properties(bench.sharded_optimizer_runs PROPERTIES LABELS "cli;dist" TIMEOUT 300
                       ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${no_gpu_env}")
endif()
# ---- CPU ranks that mpirun did not start: Gloo ----
if(GPUTRAIN_HAVE_GLOO)
  # RANK and WORLD_SIZE set by hand, without MASTER_ADDR: CPU ranks outside mpirun meet over Gloo at
  # rank 0's address, and its absence is said before anything starts.
  add_test(NAME cli.train_cpu_ranks_without_master_addr_is_exit_2
           COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml
                   --set device=cpu --set logging.dir=${train_work}/no-master)
  add_test(NAME cli.train_cpu_ranks_without_master_addr_says_why
           COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --set logging.dir=${train_work}/no-master)
  set_tests_properties(cli.train_cpu_ranks_without_master_addr_is_exit_2 cli.train_cpu_ranks_without_master_addr_says_why
                       PROPERTIES LABELS "cli;dist" ENVIRONMENT "RANK=1;WORLD_SIZE=2;${no_gpu_env}")
  set_tests_properties(cli.train_cpu_ranks_without_master_addr_says_why PROPERTIES
                       PASS_REGULAR_EXPRESSION "MASTER_ADDR is not set: Gloo ranks meet at rank 0's address")
  if(GPUTRAIN_HAVE_MPI)  # the reference: our launcher's 2 ranks under mpirun
    set(ompi_root_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # torchrun, srun's tasks, mpirun inside an sbatch script and srun's one task with
    # --nproc-per-node 2 each train 2 CPU ranks to --nproc-per-node 2's weights.
    add_test(NAME cli.train_launchers_train_the_same_weights
             COMMAND ${GPUTRAIN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_launch_paths.py ${train_work}/launch-paths ${GPUTRAIN_PYTHON}
                     -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
    # Two nodes in two network namespaces (root; skipped with the reason elsewhere).
    add_test(NAME cli.train_two_nodes_over_a_veth_link
             COMMAND ${GPUTRAIN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_two_nodes.py ${train_work}/two-nodes
                     -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml)
    set_tests_properties(cli.train_launchers_train_the_same_weights cli.train_two_nodes_over_a_veth_link PROPERTIES
                         LABELS "cli;dist" TIMEOUT 600 ENVIRONMENT "${ompi_root_env};${no_gpu_env}" SKIP_RETURN_CODE 77)
  endif()
endif()
# A backend that cannot run here is refused before any rank starts.
add_test(NAME cli.train_nproc_nccl_on_cpu_is_exit_2
         COMMAND ${GPUTRAIN_PYTHON} ${verify_checker} exit-code 2 -- ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml
                 --set device=cpu --set distributed.backend=nccl --nproc-per-node 2)
set_tests_properties(cli.train_nproc_nccl_on_cpu_is_exit_2 PROPERTIES LABELS cli)

# A node's launcher in a Kubeflow pod (RANK and WORLD_SIZE count pods): --nnodes makes it start
# ranks rather than be one (CPU ranks across nodes over Gloo); node 0 never comes, so its ranks
# give up on the rendezvous after distributed.timeout.
add_test(NAME cli.train_nnodes_in_a_pod_launches
         COMMAND ${front} train ${PROJECT_SOURCE_DIR}/configs/mlp.yaml --set device=cpu --nproc-per-node 2
                 --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port 29555 --set distributed.timeout=3)
set_tests_properties(cli.train_nnodes_in_a_pod_launches PROPERTIES LABELS cli
                     ENVIRONMENT "RANK=1;WORLD_SIZE=2;MASTER_ADDR=127.0.0.1;MASTER_PORT=29555"
                     PASS_REGULAR_EXPRESSION "launching 2 ranks on the CPU \\(Gloo\\): ranks 2 to 3 of 4, node 1 of 2")
if(NOT GPUTRAIN_HAVE_GLOO)  # without Gloo such ranks are refused, naming mpirun
  set_tests_properties(cli.train_nnodes_in_a_pod_launches PROPERTIES PASS_REGULAR_EXPRESSION "mpirun")
endif()
