import sys

from django.core.management.base import BaseCommand

from generation.pipeline.cli import build_tests_main
from generation.pipeline.sampling import SAMPLERS


class Command(BaseCommand):
    help = "Build conversations and tests offline from a flowgraph and its APIs."

    def add_arguments(self, parser):
        parser.add_argument("--flowgraph", required=True)
        parser.add_argument("--apis", required=True)
        parser.add_argument("--out", required=True)
        parser.add_argument("--paths", type=int, default=None)
        parser.add_argument("--sampler", choices=SAMPLERS, default="algorithm1")
        parser.add_argument("--noise", type=float, default=0.0)
        parser.add_argument("--seed", type=int, default=0)

        parser.add_argument("--record", type=int, default=None,
                            help="FlowBench release files: the record (workflow) to use, counted from 1")
        parser.add_argument("--lenient", action="store_true",
                            help="Convert malformed Mermaid as far as it can be read and report the problems")

    def handle(self, *args, **o):
        code = build_tests_main(o["flowgraph"], o["apis"], o["out"], paths=o["paths"],
                                sampler=o["sampler"], noise=o["noise"], seed=o["seed"], out=self.stdout,
                                record=o["record"], lenient=o["lenient"])
        if code:
            sys.exit(code)
