"""The person's calendars over CalDAV (any server: Nextcloud, Fastmail, iCloud, Radicale; Google
Calendar through its CalDAV endpoint with OAuth 2.0), with iCalendar read and written by the
``icalendar`` and ``recurring-ical-events`` libraries."""
