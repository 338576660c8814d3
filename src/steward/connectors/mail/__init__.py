"""The person's mail over IMAP and SMTP (any provider: a password or app password from the
vault, or an OAuth 2.0 access token sent with XOAUTH2 for Gmail and Microsoft 365): IMAP with
``imapclient``, sending with ``aiosmtplib``, messages read and written by the standard
library's ``email`` package, HTML reduced to text by ``html2text``."""
