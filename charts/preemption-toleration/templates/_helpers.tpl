{{/* The labels of one component's objects and pods: `include "ptol.labels" (list . "webhook")`. */}}
{{- define "ptol.selector" -}}
app.kubernetes.io/name: preemption-toleration
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels Helm installs add to every object (kept out of selectors, which cannot change). */}}
{{- define "ptol.release" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "ptol.labels" -}}
{{ include "ptol.selector" . }}
{{ include "ptol.release" (index . 0) }}
{{- end }}

{{/* No image of this project is published: the chart runs the one you build and push (docs/install.md). */}}
{{- define "ptol.image" -}}
{{- $repository := required "image.repository: name the image you built from the Dockerfile and pushed, e.g. --set image.repository=registry.example.com/preemption-toleration (docs/install.md, Build the image)" .Values.image.repository -}}
{{ $repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The operator's identity: the webhooks let it change the annotations it manages. */}}
{{- define "ptol.operatorIdentity" -}}
system:serviceaccount:{{ .Release.Namespace }}:operator
{{- end }}

{{/* The flags the guard's configuration must agree with come from their own values, never extraArgs. */}}
{{- define "ptol.checkExtraArgs" -}}
{{- range .Values.webhook.extraArgs }}
{{- if or (hasPrefix "--preemptor-identity" .) (hasPrefix "--eviction-preemptor-priority" .) }}
{{- fail (printf "webhook.extraArgs: %s must agree with the guard's matchConditions: set guard.preemptorIdentities or guard.evictionPreemptorPriority instead" .) }}
{{- end }}
{{- if hasPrefix "--steering" . }}
{{- fail (printf "webhook.extraArgs: %s must agree with the webhook server's rights: set guard.steering instead" .) }}
{{- end }}
{{- if hasPrefix "--kueue" . }}
{{- fail (printf "webhook.extraArgs: %s must agree with the webhook server's rights: set kueue.enabled instead" .) }}
{{- end }}
{{- end }}
{{- if and .Values.kueue.enabled (not .Values.guard.enabled) }}
{{- fail "kueue.enabled reads the guard's cache of pods: it needs guard.enabled=true" }}
{{- end }}
{{- if and (ne .Values.guard.steering "off") (not .Values.guard.enabled) }}
{{- fail "guard.steering acts on the guard's refusals: it needs guard.enabled=true" }}
{{- end }}
{{- if and (ne .Values.guard.steering "off") (ne .Values.guard.mode "enforce") }}
{{- fail (printf "guard.steering acts on the guard's refusals: it needs guard.mode=enforce, not %s" .Values.guard.mode) }}
{{- end }}
{{- include "ptol.checkWebhookValues" . }}
{{- end }}

{{/* Values that would render an install that breaks: refused, each with what to set instead. */}}
{{- define "ptol.checkWebhookValues" -}}
{{- if eq (int .Values.webhook.metricsPort) 8443 }}
{{- fail "webhook.metricsPort: 8443 is the webhook server's HTTPS port; choose another port for /metrics (default 8081)" }}
{{- end }}
{{- $budget := .Values.webhook.podDisruptionBudget }}
{{- if $budget.enabled }}
{{- $replicas := int .Values.webhook.replicas }}
{{- $min := toString $budget.minAvailable }}
{{- if hasSuffix "%" $min }}
{{- $percent := int (trimSuffix "%" $min) }}
{{- if gt $percent 100 }}
{{- fail (printf "webhook.podDisruptionBudget.minAvailable: %s is more than every replica; give at most 100%%, or a number below webhook.replicas" $min) }}
{{- end }}
{{- /* Kubernetes rounds a percentage of minAvailable up */}}
{{- if ge (int (ceil (divf (mul $percent $replicas) 100))) $replicas }}
{{- fail (printf "webhook.podDisruptionBudget.minAvailable: %s of %d replicas allows no disruption, so node drains would hang; lower it, raise webhook.replicas, or set webhook.podDisruptionBudget.enabled=false" $min $replicas) }}
{{- end }}
{{- else if ge (int $min) $replicas }}
{{- fail (printf "webhook.podDisruptionBudget.minAvailable: %s with webhook.replicas=%d allows no disruption, so node drains would hang; raise webhook.replicas, lower minAvailable, or set webhook.podDisruptionBudget.enabled=false" $min $replicas) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ptol.webhookDNSName" -}}
preemption-toleration-webhook.{{ .Release.Namespace }}.svc
{{- end }}

{{/* Scheduling shared by both components' pods. */}}
{{- define "ptol.podScheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
