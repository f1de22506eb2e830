{{/*
The Deployment of one oncepay service (api, worker, psp): same probes, drain,
security and scheduling for all three; only the environment differs.

  include "oncepay.deployment" (dict "ctx" $ "component" "api" "c" .Values.api "env" $envYAML
    "waitFor" (list "redis" "postgres"))

waitFor names the services the pod waits for (TCP) before it starts.
*/}}
{{- define "oncepay.deployment" -}}
{{- $ctx := .ctx }}
{{- $c := .c }}
{{- $component := .component }}
{{- $sel := dict "ctx" $ctx "component" $component }}
{{- /* the ops listener (/livez /readyz /metrics): its own port, or the worker's only one */}}
{{- $opsPort := $c.opsPort | default $c.port }}
{{- $opsName := ternary "ops" "http" (hasKey $c "opsPort") }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "oncepay.componentName" $sel }}
  labels:
    {{- include "oncepay.labels" $sel | nindent 4 }}
spec:
  replicas: {{ $c.replicas }}
  revisionHistoryLimit: 3
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  selector:
    matchLabels:
      {{- include "oncepay.selectorLabels" $sel | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "oncepay.labels" $sel | nindent 8 }}
      annotations:
        {{- include "oncepay.podAnnotations" (dict "ctx" $ctx "port" $opsPort) | nindent 8 }}
    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: {{ include "oncepay.terminationGrace" $c }}
      securityContext:
        {{- include "oncepay.podSecurityContext" dict | nindent 8 }}
      {{- with $ctx.Values.imagePullSecrets }}
      imagePullSecrets: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .waitFor }}
      initContainers:
        {{- $addrs := list }}
        {{- range . }}{{ $addrs = append $addrs (include "oncepay.addr" (list $ctx .)) }}{{ end }}
        {{- include "oncepay.waitFor" (dict "ctx" $ctx "service" $component "addrs" $addrs) | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ $component }}
          image: {{ include "oncepay.image" (dict "ctx" $ctx "service" $component) }}
          imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
          ports:
            - {name: http, containerPort: {{ $c.port }}, protocol: TCP}
            {{- if hasKey $c "opsPort" }}
            - {name: ops, containerPort: {{ $c.opsPort }}, protocol: TCP}
            {{- end }}
            {{- if hasKey $c "adminPort" }}
            - {name: admin, containerPort: {{ $c.adminPort }}, protocol: TCP}
            {{- end }}
          env:
            {{- .env | trim | nindent 12 }}
            - {name: LOG_LEVEL, value: {{ $c.logLevel | quote }}}
            {{- with include "oncepay.otlpEndpoint" $ctx }}
            - {name: OTEL_EXPORTER_OTLP_ENDPOINT, value: {{ . | quote }}}
            {{- end }}
            {{- include "oncepay.extraEnv" $c.env | nindent 12 }}
          {{- include "oncepay.lifecycle" $c | nindent 10 }}
          startupProbe:
            httpGet: {path: /livez, port: {{ $opsName }}}
            periodSeconds: 1
            failureThreshold: 60
          livenessProbe:
            httpGet: {path: /livez, port: {{ $opsName }}}
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            httpGet: {path: /readyz, port: {{ $opsName }}}
            periodSeconds: 2
            timeoutSeconds: 2
            failureThreshold: 2
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          securityContext:
            {{- include "oncepay.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
      volumes:
        - name: tmp
          emptyDir: {sizeLimit: 16Mi}
      {{- with $c.nodeSelector }}
      nodeSelector: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $c.affinity }}
      affinity: {{- toYaml $c.affinity | nindent 8 }}
      {{- else }}
      affinity:
        # spread replicas over nodes when there are several
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "oncepay.selectorLabels" $sel | nindent 20 }}
      {{- end }}
{{- end }}

{{/*
The Service in front of one oncepay service.
  include "oncepay.service" (dict "ctx" $ "component" "api" "port" 8080 "service" .Values.api.service)
*/}}
{{- define "oncepay.service" -}}
{{- $sel := dict "ctx" .ctx "component" .component }}
{{- $svc := .service | default (dict "type" "ClusterIP") }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "oncepay.componentName" $sel }}
  labels:
    {{- include "oncepay.labels" $sel | nindent 4 }}
spec:
  type: {{ $svc.type }}
  selector:
    {{- include "oncepay.selectorLabels" $sel | nindent 4 }}
  ports:
    {{- range .ports }}
    - name: {{ .name }}
      port: {{ .port }}
      targetPort: {{ .targetPort | default .name }}
      protocol: TCP
      {{- if and (ne $svc.type "ClusterIP") .nodePort }}
      nodePort: {{ .nodePort }}
      {{- end }}
    {{- end }}
{{- end }}
