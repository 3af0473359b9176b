import sys

from django.core.management.base import BaseCommand

from generation.pipeline.cli import FROM_FORMATS, TO_FORMATS, convert_workflow_main


class Command(BaseCommand):
    help = "Convert a workflow between Mermaid, the flowgraph format, code, DOT and a text outline."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--from", dest="src", choices=FROM_FORMATS, required=True)
        parser.add_argument("--to", dest="dst", choices=TO_FORMATS, required=True)
        parser.add_argument("--apis", default=None)

        parser.add_argument("--record", type=int, default=None,
                            help="FlowBench release files: the record (workflow) to use, counted from 1")
        parser.add_argument("--lenient", action="store_true",
                            help="Convert malformed Mermaid as far as it can be read and report the problems")

    def handle(self, *args, **o):
        code = convert_workflow_main(o["file"], o["src"], o["dst"], apis=o["apis"],
                                     out=self.stdout, err=self.stderr, record=o["record"], lenient=o["lenient"])
        if code:
            sys.exit(code)
