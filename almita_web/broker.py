"""kombu's filesystem transport, made safe for producers and consumers running at the same time.

The stock transport writes a message straight into its final file name, so a worker polling the
folder can pick the file up half written and die decoding it (seen when a task enqueues tasks
from inside a worker). Here a message is written under a temporary name that the consumer's
filter ignores and then renamed into place, which is atomic on one filesystem.
"""
from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot: `_get` keeps only names whose part after the first dot is "<queue>.msg".
        temporary = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(temporary, "wb", buffering=0) as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(temporary, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
