"""The person's own files on this machine as a connector: folders the agent may list, read, search
and (on a read-write connection) write, and whose changes wake goals."""
