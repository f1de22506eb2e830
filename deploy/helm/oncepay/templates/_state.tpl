{{/*
Pieces shared by the three state StatefulSets (redis, postgres, rabbitmq).
They run as the images' own unprivileged user (uid 999 in the official
images), so the entrypoints never need root to chown their data.
*/}}

{{/* include "oncepay.stateService" (dict "ctx" $ "component" "redis" "service" .Values.redis.service "ports" (list ...)) */}}
{{- define "oncepay.stateHeadless" -}}
{{- $sel := dict "ctx" .ctx "component" .component }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "oncepay.componentName" $sel }}-headless
  labels:
    {{- include "oncepay.labels" $sel | nindent 4 }}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    {{- include "oncepay.selectorLabels" $sel | nindent 4 }}
  ports:
    {{- range .ports }}
    - {name: {{ .name }}, port: {{ .port }}, targetPort: {{ .name }}, protocol: TCP}
    {{- end }}
{{- end }}

{{/* the volumeClaimTemplate "data" */}}
{{- define "oncepay.dataClaim" -}}
volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata:
      name: data
      labels:
        {{- include "oncepay.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 8 }}
    spec:
      accessModes: [ReadWriteOnce]
      {{- with .persistence.storageClassName }}
      storageClassName: {{ . }}
      {{- end }}
      resources:
        requests:
          storage: {{ .persistence.size }}
{{- end }}
