{{/*
Redis memory: the chart refuses a maxmemory that leaves Redis too little
headroom under its container's memory limit (docs/deploy.md, "Redis memory").
*/}}

{{/*
A Redis memory value in bytes, as redis.conf reads it: bytes, or a number
with kb/mb/gb (1024^n) or k/m/g (1000^n), case-insensitive. Empty when it is
not one.
*/}}
{{- define "oncepay.redisBytes" -}}
{{- $v := toString . | lower }}
{{- if regexMatch "^[0-9]+[kmg]?b?$" $v }}
{{- $unit := regexFind "[a-z]*$" $v }}
{{- $mult := get (dict "" 1 "b" 1 "k" 1e3 "m" 1e6 "g" 1e9 "kb" 1024 "mb" 1048576 "gb" 1073741824) $unit }}
{{- mulf (trimSuffix $unit $v) $mult | printf "%.0f" }}
{{- end }}
{{- end }}

{{/*
A Kubernetes memory quantity in bytes, rounded up as Kubernetes does: a
number, or a decimal with Ki/Mi/Gi/Ti (1024^n) or k/M/G/T (1000^n) or
nothing. Empty when it is none of these (exponent forms such as 1e9 included).
*/}}
{{- define "oncepay.quantityBytes" -}}
{{- if has (kindOf .) (list "int" "int64" "float64") }}
{{- ceil . | printf "%.0f" }}
{{- else if regexMatch "^([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGT]i|[kMGT])?$" (toString .) }}
{{- $unit := regexFind "[A-Za-z]*$" . }}
{{- $mult := get (dict "" 1 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776) $unit }}
{{- mulf (trimSuffix $unit .) $mult | ceil | printf "%.0f" }}
{{- end }}
{{- end }}

{{/* bytes as "209715200 bytes, 200 MiB" */}}
{{- define "oncepay.bytesMiB" -}}
{{- printf "%.0f bytes, %s MiB" (float64 .) (divf . 1048576 | printf "%.1f" | trimSuffix ".0") }}
{{- end }}

{{/*
redis.maxmemory as the string Redis is given: a string as it is, a whole
number (from --set, or a YAML number, which Helm reads as float64) in plain
digits, never in exponent form.
  include "oncepay.redisMaxmemory" .Values.redis
*/}}
{{- define "oncepay.redisMaxmemory" -}}
{{- $v := get . "maxmemory" }}
{{- if and (has (kindOf $v) (list "int" "int64" "float64")) (eq (float64 $v) (floor $v)) }}
{{- printf "%.0f" (float64 $v) }}
{{- else }}
{{- toString $v }}
{{- end }}
{{- end }}

{{/*
Fails the render unless redis.maxmemory is a Redis memory value above 0 and,
when redis.resources.limits.memory is set, at most 75% of it. Renders nothing.
  include "oncepay.redisMemoryCheck" .Values.redis
*/}}
{{- define "oncepay.redisMemoryCheck" -}}
{{- $mm := include "oncepay.redisMaxmemory" . }}
{{- $mmBytes := include "oncepay.redisBytes" $mm }}
{{- if not $mmBytes }}
{{- fail (printf "redis.maxmemory: %q is not a Redis memory value (bytes, or a number with kb, mb, gb, k, m or g)" $mm) }}
{{- end }}
{{- if eq $mmBytes "0" }}
{{- fail (printf "redis.maxmemory: %q means no limit to Redis: with maxmemory-policy noeviction it grows until the container's memory limit OOM-kills it, in a crash loop, instead of refusing writes when full. Set it to 75%% of redis.resources.limits.memory or less (docs/deploy.md, \"Redis memory\")" $mm) }}
{{- end }}
{{- $limit := dig "resources" "limits" "memory" "" . }}
{{- if ne (toString $limit) "" }}
{{- $limitBytes := include "oncepay.quantityBytes" $limit }}
{{- if not $limitBytes }}
{{- fail (printf "redis.resources.limits.memory: %q is not a memory quantity this chart can check against redis.maxmemory (bytes, or a number with Ki, Mi, Gi, Ti, k, M, G or T, such as 256Mi; no exponent forms such as 1e9)" (toString $limit)) }}
{{- end }}
{{- $most := mulf $limitBytes 0.75 }}
{{- if gt (float64 $mmBytes) $most }}
{{- fail (printf "redis.maxmemory %q (%s) is more than 75%% of redis.resources.limits.memory %s (%s): keep maxmemory at 75%% of the limit or less, here at most %s. The rest is headroom for what maxmemory does not count: allocator overhead, AOF buffers and the copy-on-write of an AOF rewrite's fork; without it Redis goes over the limit and is OOM-killed into a crash loop instead of refusing writes when full. Raise redis.resources.limits.memory together with redis.maxmemory (docs/deploy.md, \"Redis memory\")" $mm (include "oncepay.bytesMiB" $mmBytes) (toJson $limit) (include "oncepay.bytesMiB" $limitBytes) (include "oncepay.bytesMiB" (floor $most))) }}
{{- end }}
{{- end }}
{{- end }}
