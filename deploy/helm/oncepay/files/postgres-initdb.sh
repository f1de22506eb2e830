#!/bin/bash
# Creates the psp's own role and database next to the oncepay database.
# Run once by the postgres image's entrypoint on first start
# (/docker-entrypoint-initdb.d); needs PSP_DB_USER, PSP_DB_NAME, PSP_DB_PASSWORD.
# Shared by the Helm chart (ConfigMap) and docker-compose.yml (bind mount).
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc --dbname postgres \
  --set user="$PSP_DB_USER" --set db="$PSP_DB_NAME" --set pw="$PSP_DB_PASSWORD" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'pw';
CREATE DATABASE :"db" OWNER :"user";
SQL
echo "created role and database ${PSP_DB_NAME} for the psp"
