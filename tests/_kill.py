"""What the ``kill -9`` tests' child processes run: the start of their scripts (each child runs a script written to a
temporary folder, so it gets this as text, not as an import)."""

KILL_AFTER_ADD = '''
import os, signal


def kill_after_add(store_class, n):
    """Make ``store_class.add`` kill this process (SIGKILL) right after its ``n``-th call has written."""
    real_add, adds = store_class.add, [0]

    def add_then_die(self, nodes, **kwargs):
        ids = real_add(self, nodes, **kwargs)
        adds[0] += 1
        if adds[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return ids

    store_class.add = add_then_die
'''
