"""envguard watch: one cron-sized run - check, compare with the last run, alert on change."""
