"""Notify: reaching the person through their channels. :mod:`.dispatch` sends the planned
deliveries (reports, digests, approvals, questions) through the sender of each channel's kind;
the senders (Apprise, Web Push, e-mail…) live beside it."""
