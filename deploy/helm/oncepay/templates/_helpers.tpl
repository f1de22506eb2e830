{{/* Names ---------------------------------------------------------------- */}}

{{- define "oncepay.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, at most 63 - len("-rabbitmq-management") characters
would be safest, but Service names only need 63: components append at most
"-rabbitmq" (9), so the base is cut at 50.
*/}}
{{- define "oncepay.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "oncepay.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "oncepay.component" (dict "ctx" $ "component" "api") -> oncepay-api */}}
{{- define "oncepay.componentName" -}}
{{- printf "%s-%s" (include "oncepay.fullname" .ctx) .component }}
{{- end }}

{{- define "oncepay.secretName" -}}
{{- default (printf "%s-credentials" (include "oncepay.fullname" .)) .Values.existingSecret }}
{{- end }}

{{/* the Secret key holding a merchant's API key: merchant_a -> merchant-a-key */}}
{{- define "oncepay.merchantSecretKey" -}}
{{- printf "%s-key" (. | replace "_" "-") }}
{{- end }}

{{/* the first merchant id (sorted), used by the helm test */}}
{{- define "oncepay.firstMerchant" -}}
{{- first (keys .Values.merchants | sortAlpha) }}
{{- end }}

{{/* Labels --------------------------------------------------------------- */}}

{{/* include "oncepay.labels" (dict "ctx" $ "component" "api") */}}
{{- define "oncepay.labels" -}}
helm.sh/chart: {{ include "oncepay.chart" .ctx }}
{{ include "oncepay.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: oncepay
{{- end }}

{{- define "oncepay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oncepay.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Images --------------------------------------------------------------- */}}

{{/* include "oncepay.image" (dict "ctx" $ "service" "api") -> oncepay/api:dev */}}
{{- define "oncepay.image" -}}
{{- $img := .ctx.Values.image }}
{{- $repo := printf "%s/%s" $img.repository .service }}
{{- if $img.registry }}{{ $repo = printf "%s/%s" $img.registry $repo }}{{ end }}
{{- printf "%s:%s" $repo ($img.tag | toString) }}
{{- end }}

{{/* Security ------------------------------------------------------------- */}}

{{/*
Pod security context. The oncepay images are distroless "nonroot": the
kubelet cannot verify runAsNonRoot against a named USER, so the uid is
explicit (65532). The state images run as their own unprivileged user (999).
*/}}
{{- define "oncepay.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid | default 65532 }}
runAsGroup: {{ .uid | default 65532 }}
fsGroup: {{ .uid | default 65532 }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "oncepay.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Drain timing: preStop + SHUTDOWN_GRACE + slack (see values.yaml) */}}
{{- define "oncepay.terminationGrace" -}}
{{- add .preStopSeconds .shutdownGraceSeconds 5 }}
{{- end }}

{{/* preStop sleep action (no shell in distroless; needs Kubernetes >= 1.30) */}}
{{- define "oncepay.lifecycle" -}}
{{- if gt (int .preStopSeconds) 0 }}
lifecycle:
  preStop:
    sleep:
      seconds: {{ .preStopSeconds }}
{{- end }}
{{- end }}

{{/* Connection strings, built from env vars the container defines first ---- */}}

{{- define "oncepay.redisHost" -}}{{ include "oncepay.componentName" (dict "ctx" . "component" "redis") }}{{- end }}
{{- define "oncepay.postgresHost" -}}{{ include "oncepay.componentName" (dict "ctx" . "component" "postgres") }}{{- end }}
{{- define "oncepay.rabbitmqHost" -}}{{ include "oncepay.componentName" (dict "ctx" . "component" "rabbitmq") }}{{- end }}
{{- define "oncepay.pspHost" -}}{{ include "oncepay.componentName" (dict "ctx" . "component" "psp") }}{{- end }}
{{- define "oncepay.apiHost" -}}{{ include "oncepay.componentName" (dict "ctx" . "component" "api") }}{{- end }}

{{/* env entries for a secret key: include "oncepay.secretEnv" (dict "ctx" $ "name" "X" "key" "k") */}}
{{- define "oncepay.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "oncepay.secretName" .ctx }}
      key: {{ .key }}
{{- end }}

{{/*
The stable DNS names of a clustered state service's pods, one per replica:
<pod>.<headless service>.<namespace>.svc.<clusterDomain>.
  include "oncepay.nodeHosts" (dict "ctx" $ "component" "redis" "n" 6) -> "a b c ..."
*/}}
{{- define "oncepay.nodeHosts" -}}
{{- $name := include "oncepay.componentName" (dict "ctx" .ctx "component" .component) }}
{{- $hosts := list }}
{{- range $i := until (int .n) }}
{{- $hosts = append $hosts (printf "%s-%d.%s-headless.%s.svc.%s" $name $i $name $.ctx.Release.Namespace $.ctx.Values.clusterDomain) }}
{{- end }}
{{- join " " $hosts }}
{{- end }}

{{/* the Redis Cluster's nodes: 3 primaries + 3 replicas */}}
{{- define "oncepay.redisNodes" -}}{{ include "oncepay.nodeHosts" (dict "ctx" . "component" "redis" "n" 6) }}{{- end }}
{{- define "oncepay.rabbitmqNodes" -}}{{ include "oncepay.nodeHosts" (dict "ctx" . "component" "rabbitmq" "n" .Values.rabbitmq.replicas) }}{{- end }}

{{/*
REDIS_MODE (cluster mode only), REDIS_URL, DATABASE_URL, AMQP_URL for api
and worker, in the HA env contract's forms: a Redis Cluster's URL is
go-redis's ParseClusterURL form with every node as a seed; with 3 RabbitMQ
nodes AMQP_URL lists all three, comma-separated.
*/}}
{{- define "oncepay.stateEnv" -}}
{{ include "oncepay.secretEnv" (dict "ctx" . "name" "ONCEPAY_REDIS_PASSWORD" "key" "redis-password") }}
{{ include "oncepay.secretEnv" (dict "ctx" . "name" "ONCEPAY_POSTGRES_PASSWORD" "key" "postgres-password") }}
{{ include "oncepay.secretEnv" (dict "ctx" . "name" "ONCEPAY_RABBITMQ_PASSWORD" "key" "rabbitmq-password") }}
{{- if eq .Values.redis.mode "cluster" }}
{{- $nodes := splitList " " (include "oncepay.redisNodes" .) }}
- {name: REDIS_MODE, value: cluster}
- name: REDIS_URL
  value: "redis://:$(ONCEPAY_REDIS_PASSWORD)@{{ first $nodes }}:6379?{{ range $i, $h := rest $nodes }}{{ if $i }}&{{ end }}addr={{ $h }}:6379{{ end }}"
{{- else }}
- name: REDIS_URL
  value: "redis://:$(ONCEPAY_REDIS_PASSWORD)@{{ include "oncepay.redisHost" . }}:6379/0"
{{- end }}
- name: DATABASE_URL
  value: "postgres://{{ .Values.postgres.user }}:$(ONCEPAY_POSTGRES_PASSWORD)@{{ include "oncepay.postgresHost" . }}:5432/{{ .Values.postgres.database }}?sslmode=disable"
{{- $vhost := .Values.rabbitmq.vhost | trimPrefix "/" | urlquery }}
{{- $amqp := list }}
{{- if gt (int .Values.rabbitmq.replicas) 1 }}
{{- range splitList " " (include "oncepay.rabbitmqNodes" .) }}
{{- $amqp = append $amqp (printf "amqp://%s:$(ONCEPAY_RABBITMQ_PASSWORD)@%s:5672/%s" $.Values.rabbitmq.user . $vhost) }}
{{- end }}
{{- else }}
{{- $amqp = list (printf "amqp://%s:$(ONCEPAY_RABBITMQ_PASSWORD)@%s:5672/%s" .Values.rabbitmq.user (include "oncepay.rabbitmqHost" .) $vhost) }}
{{- end }}
- name: AMQP_URL
  value: {{ join "," $amqp | quote }}
{{- end }}

{{/* extra env from a values map, sorted, values quoted */}}
{{- define "oncepay.extraEnv" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}

{{/*
Pod annotations: a checksum of the credential inputs a user controls (merchant
keys from values, an existing Secret's name), so that changing them rolls the
pods; generated passwords never change after install. Not a checksum of the
rendered Secret: on install that render is random each time it is included.
And the Prometheus scrape annotations.
*/}}
{{- define "oncepay.podAnnotations" -}}
checksum/credentials: {{ dict "merchants" .ctx.Values.merchants "existingSecret" .ctx.Values.existingSecret | toJson | sha256sum | trunc 16 }}
{{- if .ctx.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/*
The wait-for-deps init container: /probe (shipped in every oncepay image)
waits until each host:port accepts TCP connections, so a pod does not
crash-loop while the state services start. Kubernetes has no depends_on.
  include "oncepay.waitFor" (dict "ctx" $ "service" "api" "addrs" (list "host:port" ...))
*/}}
{{- define "oncepay.waitFor" -}}
- name: wait-for-deps
  image: {{ include "oncepay.image" (dict "ctx" .ctx "service" .service) }}
  imagePullPolicy: {{ .ctx.Values.image.pullPolicy }}
  command: [/probe, wait, -timeout, 10m, {{ join ", " .addrs }}]
  securityContext:
    {{- include "oncepay.containerSecurityContext" . | nindent 4 }}
  resources:
    requests: {cpu: 10m, memory: 16Mi}
    limits: {memory: 32Mi}
{{- end }}

{{/* host:port of a state service or the psp */}}
{{- define "oncepay.addr" -}}
{{- $ctx := index . 0 }}{{ $c := index . 1 }}
{{- $port := dict "redis" 6379 "postgres" 5432 "rabbitmq" 5672 "psp" $ctx.Values.psp.port }}
{{- printf "%s:%v" (include "oncepay.componentName" (dict "ctx" $ctx "component" $c)) (get $port $c) }}
{{- end }}


{{/* The OTLP/HTTP endpoint the services export traces to: tracing.otlpEndpoint,
else the chart's Jaeger when enabled, else "" (tracing off). */}}
{{- define "oncepay.otlpEndpoint" -}}
{{- if .Values.tracing.otlpEndpoint -}}
{{ .Values.tracing.otlpEndpoint }}
{{- else if .Values.tracing.jaeger.enabled -}}
http://{{ include "oncepay.componentName" (dict "ctx" . "component" "jaeger") }}:4318
{{- end -}}
{{- end }}
