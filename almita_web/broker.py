"""kombu's filesystem transport, made safe for producers and consumers running at the same time.

The stock transport writes a message straight into its final file name, so a worker polling the
folder can pick the file up half written and die decoding it (seen when a task enqueues tasks
from inside a worker). Here a message is written under a temporary name that the consumer's
filter ignores and then renamed into place, which is atomic on one filesystem.

Reading has the mirror problem: the stock `_get` moves a message to the system temp folder, which
is a copy and a delete when that folder is on another filesystem (a tmpfs /tmp), so two worker
processes can both copy — and both run — the same message. Here a consumer takes a message by
renaming it into the processed folder beside the queue (same filesystem) under a name of its own:
exactly one consumer's rename succeeds.
"""
from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.transport.virtual import Empty
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


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


    def _get(self, queue):
        wanted = f"{queue}.msg"
        taken_dir = self.processed_folder if os.path.isdir(self.processed_folder) else self.data_folder_in
        for filename in sorted(os.listdir(self.data_folder_in)):
            if filename.partition(".")[2] != wanted:
                continue
            taken = os.path.join(taken_dir, f".taken-{os.getpid()}-{uuid.uuid4().hex}")
            try:
                os.rename(os.path.join(self.data_folder_in, filename), taken)
            except OSError:
                continue  # another consumer took it first
            try:
                with open(taken, "rb") as handle:
                    payload = handle.read()
                if self.store_processed:
                    os.replace(taken, os.path.join(self.processed_folder, filename))
                else:
                    os.remove(taken)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
