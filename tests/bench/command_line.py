"""`vitjax bench`'s command line as the tests give it: parsed by the bench's own parser, config flags too."""
import argparse

from vitjax.bench import run
from vitjax.config import parse_command_line


def bench_args(argv):
    parser = argparse.ArgumentParser()
    run.main_args(parser)
    return parse_command_line(parser, argv)
