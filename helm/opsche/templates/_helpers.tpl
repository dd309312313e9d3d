{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "opsche.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "opsche.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "opsche.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "opsche.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "opsche.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "opsche.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Lease the replicas elect a leader on: named after the scheduler unless set. */}}
{{- define "opsche.leaseName" -}}
{{- default .Values.schedulerName .Values.leaderElection.resourceName -}}
{{- end -}}

{{- define "opsche.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Values that no schema can check: fail with a message that says what to change. */}}
{{- define "opsche.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicaCount is %d but leaderElection.enabled is false: several replicas would all schedule at once; enable leader election or set replicaCount to 1" (int .Values.replicaCount)) -}}
{{- end -}}
{{- range $key := list "schedulerName" "leaderElection" "metricsPort" -}}
{{- if hasKey $.Values.config $key -}}
{{- fail (printf "config.%s: set it with the chart's own value (%s), not inside config" $key (ternary "metrics.port" $key (eq $key "metricsPort"))) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* opsche's configuration file: the user's config plus what the chart owns. */}}
{{- define "opsche.config" -}}
{{- $owned := dict "schedulerName" .Values.schedulerName "metricsPort" (int .Values.metrics.port) -}}
{{- $election := dict "leaderElect" (ternary "true" "false" .Values.leaderElection.enabled) "leaseDurationSeconds" .Values.leaderElection.leaseDurationSeconds "renewDeadlineSeconds" .Values.leaderElection.renewDeadlineSeconds "retryPeriodSeconds" .Values.leaderElection.retryPeriodSeconds "resourceName" (include "opsche.leaseName" .) "resourceNamespace" .Release.Namespace -}}
{{- $_ := set $owned "leaderElection" $election -}}
{{- toYaml (merge $owned (deepCopy .Values.config)) -}}
{{- end -}}
