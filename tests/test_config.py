"""The config layer: config files and their `:arg`, `--config.key=value` overrides, and `vitjax train`'s flags."""
import glob
import os
import re
import subprocess
import sys

import pytest

from vitjax import config as config_layer, durations

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = os.path.join(ROOT, "tests", "train", "tiny_config.py")
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "configs", "**", "*.py"), recursive=True))
# A command in a config file's docstring: `vitjax train|bench --config configs/<file>.py[:arg]`.
COMMAND = re.compile(r"vitjax (?:train|bench) --config (configs/\S+?\.py(?::\S+)?)(?:\s|$)")


def _tiny():
    return config_layer.load_config(TINY)


# --- config files -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: os.path.relpath(p, ROOT))
def test_config_file_documents_its_command_and_result_and_loads_as_documented(path):
    doc = config_layer.load_module(path).__doc__
    documented = COMMAND.findall(doc)
    assert documented and "Expected" in doc, doc
    for path_with_arg in {os.path.relpath(path, ROOT), *documented}:
        config = config_layer.load_config(os.path.join(ROOT, path_with_arg))
        assert set(config.keys()) == set(config_layer.base().keys()), path_with_arg
        lengths = [config[f"total_{unit}"] for unit in durations.DURATION_UNITS]
        assert sum(bool(d) for d in lengths) == 1, (path_with_arg, lengths)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: os.path.relpath(p, ROOT))
def test_config_file_cites_nothing_outside_the_repository(path):
    with open(path) as f:
        text = f.read()
    assert "../" not in text and "shared/" not in text.replace("/mnt/shared/", "")


def test_an_unknown_arg_key_fails_naming_the_known_keys_and_the_closest():
    with pytest.raises(config_layer.UnknownKeyError) as error:
        config_layer.load_config(os.path.join(ROOT, "configs/imagenet/vit_b16.py:data=imagenet2012,epoch=300"))
    message = str(error.value)
    assert "unknown key 'epoch' in ':data=imagenet2012,epoch=300'" in message
    assert "known keys: data, epochs, split, sharding; did you mean 'epochs'?" in message
    assert message.startswith(os.path.join(ROOT, "configs/imagenet/vit_b16.py"))  # the file that took the arg


def test_a_bool_arg_key_may_be_given_by_name_and_others_need_a_value():
    assert config_layer.load_config(os.path.join(ROOT, "configs/fashion_mnist/vit.py:long")).total_epochs == 40.0
    with pytest.raises(config_layer.UnknownKeyError, match="unknown key 'longer'.*did you mean 'long'"):
        config_layer.load_config(os.path.join(ROOT, "configs/fashion_mnist/vit.py:longer"))
    with pytest.raises(config_layer.ConfigError, match=r"'variant' in ':variant' needs a value"):
        config_layer.parse_arg("variant", variant="Ti/16")


def test_parse_arg_reads_each_value_as_its_default_type():
    arg = config_layer.parse_arg("res=384,epochs=300,data=cifar10,long=false", res=224, epochs=90.0, data="x",
                                 long=True, shape=(1, 2))
    assert (arg.res, arg.epochs, arg.data, arg.long, arg.shape) == (384, 300.0, "cifar10", False, (1, 2))
    assert isinstance(arg.epochs, float) and isinstance(arg.res, int)
    assert config_layer.parse_arg(None, steps=7).steps == 7
    with pytest.raises(config_layer.ConfigError, match=r"res='big': expected an int"):
        config_layer.parse_arg("res=big", res=224)


def test_parse_part_arg_refuses_a_key_the_chosen_part_would_ignore():
    parts = {"train": ("seed",), "read": ()}
    arg = config_layer.parse_part_arg("part=train,seed=3", parts, part="", seed=0)
    assert (arg.part, arg.seed) == ("train", 3)
    # Given at its default value it is still a key the part does not read.
    with pytest.raises(config_layer.ConfigError, match="seed: not read by part=read, which reads no other key"):
        config_layer.parse_part_arg("part=read,seed=0", parts, part="", seed=0)
    with pytest.raises(config_layer.ConfigError, match="part='write': the parts are train, read"):
        config_layer.parse_part_arg("part=write", parts, part="", seed=0)
    with pytest.raises(config_layer.UnknownKeyError, match="did you mean 'seed'"):
        config_layer.parse_part_arg("part=train,sed=1", parts, part="", seed=0)


def test_load_config_locks_the_config_and_names_a_bad_file(tmp_path):
    config = config_layer.load_config(f"{TINY}:steps=7")
    assert config.total_steps == 7
    with pytest.raises(AttributeError):
        config.no_such_key = 1
    with pytest.raises(FileNotFoundError, match="no_such.py"):
        config_layer.load_config(str(tmp_path / "no_such.py"))
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(config_layer.ConfigError, match="defines no get_config"):
        config_layer.load_config(str(empty))


@pytest.mark.parametrize("body,message", [
    ("from vitjax.config import base\ndef get_config(arg=None):\n    c = base()\n    c.learning_rate = 5.0\n"
     "    c.data.pp_trian = 'x'\n    return c\n",
     r"sets keys the config schema does not have.*:\n  data.pp_trian; did you mean 'data.pp_train'\?"
     r"\n  learning_rate; did you mean 'lr'\?$"),
    ("def get_config(:\n", r"could not be loaded: SyntaxError"),
    ("import no_such_module\n", r"could not be loaded: ModuleNotFoundError: No module named 'no_such_module'"),
    ("def get_config(arg=None):\n    return undefined_name\n", r"get_config\(None\) of .* failed: NameError"),
    ("def get_config(arg=None):\n    return dict(lr=1.0)\n", r"returned a dict, not a ConfigDict"),
])
def test_a_mistake_inside_a_config_file_is_named_at_load(tmp_path, body, message):
    path = tmp_path / "mine.py"
    path.write_text(body)
    with pytest.raises(config_layer.ConfigError, match=message):
        config_layer.load_config(str(path))


def test_model_arguments_in_a_config_file_stay_free_until_the_model_checks_them(tmp_path):
    from vitjax import models
    path = tmp_path / "mine.py"
    path.write_text(f"import sys\nsys.path.insert(0, {os.path.dirname(TINY)!r})\nimport tiny_config\n"
                    "def get_config(arg=None):\n    c = tiny_config.get_config()\n    c.model.widht = 3\n    return c\n")
    config = config_layer.load_config(str(path))
    with pytest.raises(ValueError, match=r"model.widht is no argument of ViT; did you mean model.width\?"):
        models.build(config.model_name, 4, **config.model)


def test_split_path_keeps_colons_inside_the_arg():
    assert config_layer.split_path("a/b.py:x=1,name=c:d") == ("a/b.py", "x=1,name=c:d")
    assert config_layer.split_path("a/b.py") == ("a/b.py", None)


# --- overrides ----------------------------------------------------------------------------------

def test_overrides_set_nested_keys_and_return_the_values_set():
    config = _tiny()
    applied = config_layer.apply_overrides(config, {"data.train_size": 100, "model.patch_size": "8",
                                                    "data.synthetic.image_shape": [8, 8, 3], "lr": "1e-2"})
    assert applied == {"data.train_size": 100, "model.patch_size": 8, "data.synthetic.image_shape": (8, 8, 3),
                       "lr": 0.01}
    assert (config.data.train_size, config.model.patch_size, config.lr) == (100, 8, 0.01)
    assert config.data.synthetic.image_shape == (8, 8, 3)


@pytest.mark.parametrize("overrides, message", [
    ({"batchsize": "8"}, "the config has no field 'batchsize'; did you mean 'batch_size'?"),
    ({"data.trian_size": 1}, "data has no field 'trian_size'; did you mean 'data.train_size'?"),
    ({"modle.width": 1}, "the config has no field 'modle'; did you mean 'model.width'?"),
    ({"data.batch_size": 8}, "data has no field 'batch_size'; did you mean 'batch_size'?"),
    ({"learning_rate": "1e-3"}, "the config has no field 'learning_rate'; did you mean 'lr'?"),
    ({"lr.value": 1}, "lr has no field 'value'"),
    ({"model.no_such_option": 1}, "model has no field 'no_such_option'"),
    ({"model.scann": "true"}, "model has no field 'scann'; did you mean 'model.scan'?"),
])
def test_unknown_override_keys_fail_naming_the_closest_key(overrides, message):
    with pytest.raises(config_layer.UnknownKeyError) as error:
        config_layer.apply_overrides(_tiny(), overrides)
    assert message in str(error.value)


@pytest.mark.parametrize("key, text, message", [
    ("batch_size", "large", "batch_size='large': expected an int"),
    ("batch_size", "1.5", "batch_size='1.5': expected an int"),
    ("lr", "None", "lr='None': expected a float"),
    ("model.scan", "yes", "model.scan='yes': expected a bool (true or false)"),
    ("data.synthetic.image_shape", "16", "data.synthetic.image_shape='16': expected a tuple"),
    ("data.train_size", "all", "data.train_size='all': expected an int or None"),
    ("model", "vit", "model is a group of fields"),
])
def test_a_value_of_the_wrong_type_fails_naming_key_value_and_type(key, text, message):
    with pytest.raises(config_layer.ConfigError) as error:
        config_layer.apply_overrides(_tiny(), {key: text})
    assert message in str(error.value)


@pytest.mark.parametrize("text", ["(8, 8, 1)", "8,8,1", "[8, 8, 1]"])
def test_tuples_parse_from_literals(text):
    config = _tiny()
    config_layer.apply_overrides(config, {"data.synthetic.image_shape": text})
    assert config.data.synthetic.image_shape == (8, 8, 1)


@pytest.mark.parametrize("text, value", [("true", True), ("True", True), ("FALSE", False)])
def test_bools_parse_in_any_case(text, value):
    config = _tiny()
    config_layer.apply_overrides(config, {"data.class_balanced": text})
    assert config.data.class_balanced is value


def test_none_is_a_value_of_placeholders_only():
    config = _tiny()
    config_layer.apply_overrides(config, {"data.train_size": "1000"})
    config_layer.apply_overrides(config, {"data.train_size": "None"})  # a placeholder, whatever it holds now
    assert config.data.train_size is None
    config_layer.apply_overrides(config, {"data.name": "None"})  # a plain string field keeps the text
    assert config.data.name == "None"


def test_model_arguments_the_config_does_not_list_can_be_set_with_their_type():
    config = _tiny()
    assert "scan" not in config.model
    applied = config_layer.apply_overrides(config, {"model.scan": "True", "model.remat_policy": "dots_saveable",
                                                    "model.dropout_rate": "0"})
    assert applied == {"model.scan": True, "model.remat_policy": "dots_saveable", "model.dropout_rate": 0.0}
    assert config.model.scan is True and isinstance(config.model.dropout_rate, float)
    with pytest.raises(config_layer.ConfigError, match="model.scan='yes': expected a bool"):
        config_layer.apply_overrides(_tiny(), {"model.scan": "yes"})
    with pytest.raises(config_layer.UnknownKeyError, match="model has no field 'dtype'"):
        config_layer.apply_overrides(_tiny(), {"model.dtype": "bfloat16"})  # the trainer sets it from config.dtype


def test_an_npz_teachers_model_arguments_are_set_after_its_model_name():
    """distillation.model holds an .npz teacher's model arguments, typed by the class model_name names."""
    with pytest.raises(config_layer.UnknownKeyError, match=r"distillation.model_name names, which is not set.*"
                                                          r"--config.distillation.model_name=bit"):
        config_layer.apply_overrides(_tiny(), {"distillation.model.width": "8"})
    config = _tiny()
    applied = config_layer.apply_overrides(config, {"distillation.model_name": "bit", "distillation.model.width": "8",
                                                    "distillation.model.stem": "small"})
    assert applied == {"distillation.model_name": "bit", "distillation.model.width": 8,
                       "distillation.model.stem": "small"}
    assert dict(config.distillation.model) == {"width": 8, "stem": "small"} and config.model.width == 32
    with pytest.raises(config_layer.UnknownKeyError, match="did you mean 'distillation.model.width'"):
        config_layer.apply_overrides(config, {"distillation.model.widht": "8"})
    with pytest.raises(config_layer.ConfigError, match="distillation.model.width='eight': expected an int"):
        config_layer.apply_overrides(config, {"distillation.model.width": "eight"})


def test_override_flags_read_back_to_the_same_values():
    overrides = {"batch_size": 64, "lr": 1e-3, "model.scan": True, "data.class_balanced": False,
                 "data.synthetic.image_shape": (8, 8, 1), "data.train_size": None, "data.name": "synthetic"}
    flags = config_layer.override_flags(overrides)
    assert "--config.model.scan=true" in flags and "--config.data.synthetic.image_shape=(8, 8, 1)" in flags
    text, rest = config_layer.overrides_from_argv(flags)
    assert rest == [] and all(isinstance(v, str) for v in text.values())
    assert config_layer.apply_overrides(_tiny(), text) == overrides


def test_overrides_come_out_of_argv_in_both_forms():
    overrides, rest = config_layer.overrides_from_argv(
        ["--config", "c.py:x=1", "--config.lr", "0.1", "--config.data.pp_train=a=b", "--workdir", "w"])
    assert overrides == {"lr": "0.1", "data.pp_train": "a=b"}
    assert rest == ["--config", "c.py:x=1", "--workdir", "w"]
    with pytest.raises(config_layer.ConfigError, match="--config.lr needs a value"):
        config_layer.overrides_from_argv(["--config.lr"])


# --- the command line ---------------------------------------------------------------------------

def _vitjax(*args):
    return subprocess.run([sys.executable, "-m", "vitjax", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "VITJAX_TCMALLOC": "0"})


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_train_help_lists_its_flags(flag):
    run = _vitjax("train", flag)
    assert run.returncode == 0, run.stderr[-2000:]
    for listed in ("--config", "--workdir", "--force", "--distributed", "--coordinator_address", "--num_processes",
                   "--process_id", "--config.KEY=VALUE"):
        assert listed in run.stdout, listed


# Runs the command in-process and reports whether JAX was imported by the time it exited.
_EXITS_BEFORE_JAX = """
import sys
from vitjax import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as exit:
    print("exit", exit.code)
print("jax imported:", "jax" in sys.modules, "tensorflow imported:", "tensorflow" in sys.modules)
"""


@pytest.mark.parametrize("argv, message", [
    (["train", "--config", TINY, "--workdir", "W", "--config.batchsize=8"], "did you mean 'batch_size'?"),
    (["train", "--config", f"{TINY}:step=5", "--workdir", "W"], "did you mean 'steps'?"),
    (["train", "--config", TINY, "--workdir", "W", "--config.lr", "fast"], "lr='fast': expected a float"),
    (["bench", "--config", TINY, "--config.batchsize=1", "--no_timm"], "did you mean 'batch_size'?"),
])
def test_a_config_typo_fails_before_jax_starts(tmp_path, argv, message):
    argv = [str(tmp_path / "w") if a == "W" else a for a in argv]
    run = subprocess.run([sys.executable, "-c", _EXITS_BEFORE_JAX, *argv], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert f"exit vitjax {argv[0]}: error: " in run.stdout and message in run.stdout, run.stdout + run.stderr[-2000:]
    assert "jax imported: False tensorflow imported: False" in run.stdout
    assert not (tmp_path / "w").exists()
