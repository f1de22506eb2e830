{{/* Helpers of networkpolicy.yaml */}}

{{- define "oncepay.peer" -}}
- podSelector:
    matchLabels:
      {{- include "oncepay.selectorLabels" . | nindent 6 }}
{{- end }}
{{- define "oncepay.exposedFrom" -}}
{{- /* from: for a port that is exposed outside the cluster; empty list = anyone */ -}}
{{- if .ctx.Values.networkPolicy.exposedFrom }}
from:
  {{- toYaml .ctx.Values.networkPolicy.exposedFrom | nindent 2 }}
{{- end }}
{{- end }}
{{- define "oncepay.exposed" -}}
{{- ne .type "ClusterIP" -}}
{{- end }}
