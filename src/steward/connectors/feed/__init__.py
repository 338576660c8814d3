"""Feeds (RSS 0.9x, 1.0 and 2.0, Atom) read with ``feedparser`` through the polite web
fetcher: a ``feed`` connection per feed, new entries as ``feed.entry`` events, and the
``feed_entries`` tool."""
