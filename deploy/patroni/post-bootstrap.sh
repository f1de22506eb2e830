#!/bin/bash
# Patroni's post_bootstrap: run once, on the node that initialised the
# cluster, with a superuser connection string as $1. Creates the api's role
# and database (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB), the psp's
# (PSP_DB_USER, PSP_DB_NAME, PSP_DB_PASSWORD), as the postgres image's
# entrypoint and its initdb script do for a single node, and the table the
# fault driver's write probes insert into.
set -euo pipefail
psql "$1" -v ON_ERROR_STOP=1 --no-psqlrc \
	--set user="${POSTGRES_USER:-oncepay}" --set db="${POSTGRES_DB:-oncepay}" --set pw="${POSTGRES_PASSWORD:?}" \
	--set pspuser="${PSP_DB_USER:-psp}" --set pspdb="${PSP_DB_NAME:-psp}" --set psppw="${PSP_DB_PASSWORD:?}" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'pw';
CREATE DATABASE :"db" OWNER :"user";
CREATE ROLE :"pspuser" LOGIN PASSWORD :'psppw';
CREATE DATABASE :"pspdb" OWNER :"pspuser";
CREATE TABLE patroni_probe (at timestamptz NOT NULL DEFAULT now());
SQL
echo "post-bootstrap: roles and databases ${POSTGRES_DB:-oncepay} and ${PSP_DB_NAME:-psp} created"
