import sys

from django.core.management.base import BaseCommand

from generation.pipeline.cli import validate_graph_main


class Command(BaseCommand):
    help = "Validate a flowgraph or conversation graph. Exit 0 valid, 1 invalid, 2 unreadable."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--kind", choices=["flowgraph", "conversation"], default=None)
        parser.add_argument("--apis", default=None, help="API list, to check api node names")

        parser.add_argument("--record", type=int, default=None,
                            help="FlowBench release files: the record (workflow) to use, counted from 1")
        parser.add_argument("--lenient", action="store_true",
                            help="Convert malformed Mermaid as far as it can be read and report the problems")

    def handle(self, *args, **options):
        code = validate_graph_main(options["file"], options["kind"], out=self.stdout, apis=options["apis"],
                                   record=options["record"], lenient=options["lenient"])
        if code:
            sys.exit(code)
