"""The results table survives many writers at once (a --parallel sweep's runs finishing together)."""
import csv
import json
import os
import threading

from tests.sweep.sweep_files import write_sweep_file
from vitjax.sweep import runner, spec, table

THREADS, WRITES = 8, 40


def _all_at_once(write):
    """Calls write() WRITES times on each of THREADS threads started together; returns what they raised."""
    start, errors = threading.Barrier(THREADS), []

    def writer():
        start.wait()
        for _ in range(WRITES):
            try:
                write()
            except Exception as error:  # noqa: BLE001  (collected: the assertion lists them)
                errors.append(repr(error))

    threads = [threading.Thread(target=writer) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_concurrent_table_writes_neither_fail_nor_leave_half_files(tmp_path):
    sweep = spec.load(write_sweep_file(tmp_path, "def get_runs(arg=None):\n"
                                            "    return [(f'r{i}', TINY, {'lr': 0.01 * i}) for i in range(1, 6)]\n"))
    out = tmp_path / "out"
    os.makedirs(out)
    (out / table.SWEEP).write_text(json.dumps(sweep.describe()))
    rows = table.collect(str(out))
    errors = _all_at_once(lambda: table.write(str(out), rows))
    errors += _all_at_once(lambda: runner._write_table(str(out), say=print, quiet=True))
    assert errors == [], f"{len(errors)} of {2 * THREADS * WRITES} writes failed, e.g. {errors[:3]}"
    assert sorted(os.listdir(out)) == sorted([table.CSV, table.JSON, table.SUMMARY_CSV, table.SUMMARY_JSON,
                                               table.SWEEP])  # no temporary file left behind
    with open(out / table.CSV) as f:
        assert [row["name"] for row in csv.DictReader(f)] == ["r1", "r2", "r3", "r4", "r5"]
    assert len(json.loads((out / table.JSON).read_text())["runs"]) == 5


def test_pair_key_names_cpu_instruction_sets_devices_and_code():
    results = {"host": {"cpu": "AMD EPYC (family 25, model 17, avx512f)", "isa": ["avx2", "avx512f"]},
               "devices": 4, "code": {"source_sha256": "0123456789abcdef" * 4}}
    assert table.pair_key(results) == ("AMD EPYC (family 25, model 17, avx512f) | avx2+avx512f | 4 devices | "
                                       "0123456789ab")
    other_code = {**results, "code": {"source_sha256": "f" * 64}}
    assert table.pair_key(other_code) != table.pair_key(results)
    # A run from before instruction sets and code were recorded pairs with none of these.
    old_run = {"host": {"cpu": "AMD EPYC"}, "devices": 4}
    assert table.pair_key(old_run) == "AMD EPYC | unrecorded | 4 devices | unrecorded"


def test_pair_key_separates_runs_by_arithmetic_xla_flags_and_library_versions():
    base = {"host": {"cpu": "AMD EPYC", "isa": ["avx2"], "xla_flags": ""}, "devices": 4,
            "code": {"source_sha256": "0" * 64}}
    old_key = "AMD EPYC | avx2 | 4 devices | 000000000000"
    assert table.pair_key(base) == old_key  # nothing more recorded: the key a run always had
    neutral = {**base, "host": {**base["host"], "xla_flags": "--xla_cpu_collective_call_terminate_timeout_seconds=600 "
                                                             "--xla_force_host_platform_device_count=4"}}
    assert table.pair_key(neutral) == old_key
    capped = {**base, "host": {**base["host"], "xla_flags": "--xla_cpu_max_isa=AVX2"}}
    assert table.pair_key(capped) == old_key + " | XLA_FLAGS --xla_cpu_max_isa=AVX2"
    versions = {"jax": "0.10.2", "jaxlib": "0.10.2"}
    pinned = {**base, "code": {**base["code"], "libraries": versions}}
    newer = {**base, "code": {**base["code"], "libraries": {**versions, "jaxlib": "0.11.0"}}}
    assert table.pair_key(pinned) == old_key + " | jax 0.10.2 jaxlib 0.10.2"
    assert len({table.pair_key(r) for r in (base, capped, pinned, newer)}) == 4


def test_a_run_resumed_on_another_host_pairs_with_no_single_host_run():
    amd = {"cpu": "AMD EPYC (family 25, model 17, avx512f)", "isa": ["avx2", "avx512f"]}
    intel = {"cpu": "Intel Xeon (family 6, model 207, avx512f)", "isa": ["avx2", "avx512f", "amx_tile"]}
    code = {"source_sha256": "0123456789abcdef" * 4}
    one_host = {"host": amd, "devices": 4, "code": code,
                "trained_on": [{"from_step": 0, "host": amd, "code": code, "devices": 4},
                               {"from_step": 500, "host": amd, "code": code, "devices": 4}]}
    assert table.pair_key(one_host) == table.pair_key({"host": amd, "devices": 4, "code": code})
    # Finished on the AMD host, so its own host and code say AMD; its first 500 steps ran on the Intel one.
    resumed = {**one_host, "trained_on": [{"from_step": 0, "host": intel, "code": code, "devices": 4},
                                          {"from_step": 500, "host": amd, "code": code, "devices": 4}]}
    assert table.pair_key(resumed).startswith("mixed: ")
    assert table.pair_key(resumed) not in {table.pair_key(one_host), table.pair_key({**one_host, "host": intel})}
