{{/* Names. */}}
{{- define "media-service.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "media-service.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "media-service.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; "component" is added per object. */}}
{{- define "media-service.labels" -}}
helm.sh/chart: {{ include "media-service.chart" . }}
{{ include "media-service.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: media-service
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "media-service.selectorLabels" -}}
app.kubernetes.io/name: {{ include "media-service.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels and selector of a component: (dict "root" $ "component" "api") */}}
{{- define "media-service.componentLabels" -}}
{{ include "media-service.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "media-service.componentSelector" -}}
{{ include "media-service.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The service image: repository@digest or repository:tag (default: appVersion). */}}
{{- define "media-service.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "media-service.controllerServiceAccountName" -}}
{{- if .Values.controller.serviceAccount.create -}}
{{- default (printf "%s-controller" (include "media-service.fullname" .)) .Values.controller.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.controller.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "media-service.runnerServiceAccountName" -}}
{{- if .Values.runner.serviceAccount.create -}}
{{- default (printf "%s-runner" (include "media-service.fullname" .)) .Values.runner.serviceAccount.name -}}
{{- else -}}
{{- .Values.runner.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Secrets: [name, key] of each credential. */}}
{{- define "media-service.apiKeysSecret" -}}
{{- default (printf "%s-api-keys" (include "media-service.fullname" .)) .Values.apiKeys.existingSecret -}}
{{- end -}}

{{- define "media-service.s3Secret" -}}
{{- default (printf "%s-s3" (include "media-service.fullname" .)) .Values.s3.existingSecret -}}
{{- end -}}

{{- define "media-service.s3HasCredentials" -}}
{{- if or .Values.s3.existingSecret .Values.s3.accessKeyId -}}true{{- end -}}
{{- end -}}

{{- define "media-service.redisUrlSecret" -}}
{{- if and (not .Values.redis.enabled) .Values.redis.external.existingSecret -}}
{{- .Values.redis.external.existingSecret -}}
{{- else -}}
{{- printf "%s-redis-url" (include "media-service.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "media-service.redisUrlKey" -}}
{{- if and (not .Values.redis.enabled) .Values.redis.external.existingSecret -}}
{{- .Values.redis.external.existingSecretKey -}}
{{- else -}}redis-url{{- end -}}
{{- end -}}

{{- define "media-service.redisFullname" -}}
{{- printf "%s-redis" (include "media-service.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "media-service.webhookSecret" -}}
{{- default (printf "%s-webhooks" (include "media-service.fullname" .)) .Values.webhooks.existingSecret -}}
{{- end -}}

{{- define "media-service.webhookSigned" -}}
{{- if or .Values.webhooks.existingSecret .Values.webhooks.signingSecret -}}true{{- end -}}
{{- end -}}

{{- define "media-service.aiSecret" -}}
{{- default (printf "%s-ai" (include "media-service.fullname" .)) .Values.ai.existingSecret -}}
{{- end -}}

{{- define "media-service.aiHasKey" -}}
{{- if or .Values.ai.existingSecret .Values.ai.apiKey -}}true{{- end -}}
{{- end -}}

{{/*
The keys of ai.providers, as JSON: name → {env, secret, key} of each provider that has one, plus
"value" when the chart's <fullname>-ai Secret holds it (apiKey). The API and the controller read
it as env (AI_PROVIDER_<NAME>_API_KEY), config.yaml refers to it as ${env}, runner pods read it
from secret/key.
*/}}
{{- define "media-service.aiProviderKeys" -}}
{{- $chartSecret := printf "%s-ai" (include "media-service.fullname" .) -}}
{{- $keys := dict -}}
{{- $envs := dict -}}
{{- range $name, $p := .Values.ai.providers -}}
{{- $env := printf "AI_PROVIDER_%s_API_KEY" ($name | upper | replace "-" "_") -}}
{{- if hasKey $envs $env -}}
{{- fail (printf "ai.providers: %s and %s would share the environment variable %s; rename one" (get $envs $env) $name $env) -}}
{{- end -}}
{{- $_ := set $envs $env $name -}}
{{- if $p.existingSecret -}}
{{- $_ := set $keys $name (dict "env" $env "secret" $p.existingSecret "key" (default "api-key" $p.existingSecretKey)) -}}
{{- else if $p.apiKey -}}
{{- $_ := set $keys $name (dict "env" $env "secret" $chartSecret "key" (printf "%s-api-key" $name) "value" $p.apiKey) -}}
{{- end -}}
{{- end -}}
{{- toJson $keys -}}
{{- end -}}

{{/*
The Kueue settings and the runner Jobs' labels, annotations and priority bands (runner.jobLabels,
runner.kueue, runner.perType, runner.perClient, runner.priorityBands) as config.yaml's kubernetes
settings, JSON: only those given.
*/}}
{{- define "media-service.runnerJobMetadata" -}}
{{- $r := .Values.runner -}}
{{- $out := dict "max_waiting_admission" $r.kueue.maxWaitingAdmission -}}
{{- with $r.jobLabels }}{{ $_ := set $out "job_labels" . }}{{ end -}}
{{- with $r.jobAnnotations }}{{ $_ := set $out "job_annotations" . }}{{ end -}}
{{- with $r.kueue.queueName }}{{ $_ := set $out "kueue" (dict "queue_name" .) }}{{ end -}}
{{- range $key, $scope := dict "per_type" $r.perType "per_client" $r.perClient -}}
{{- $entries := dict -}}
{{- range $name, $m := $scope -}}
{{- $entry := dict -}}
{{- with $m.labels }}{{ $_ := set $entry "labels" . }}{{ end -}}
{{- with $m.annotations }}{{ $_ := set $entry "annotations" . }}{{ end -}}
{{- with $m.queueName }}{{ $_ := set $entry "queue_name" . }}{{ end -}}
{{- $_ := set $entries $name $entry -}}
{{- end -}}
{{- if $entries }}{{ $_ := set $out $key $entries }}{{ end -}}
{{- end -}}
{{- $bands := list -}}
{{- range $r.priorityBands -}}
{{- $band := dict "min_priority" .minPriority -}}
{{- with .priorityClassName }}{{ $_ := set $band "priority_class_name" . }}{{ end -}}
{{- with .workloadPriorityClass }}{{ $_ := set $band "workload_priority_class" . }}{{ end -}}
{{- $bands = append $bands $band -}}
{{- end -}}
{{- if $bands }}{{ $_ := set $out "priority_bands" $bands }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
A value generated once and kept: the existing Secret's, else a new random one.
(dict "root" $ "secret" name "key" key "length" n)
*/}}
{{- define "media-service.persistentRandom" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .secret -}}
{{- if and $existing (index ($existing.data | default dict) .key) -}}
{{- index $existing.data .key | b64dec -}}
{{- else -}}
{{- randAlphaNum (int .length) -}}
{{- end -}}
{{- end -}}

{{/*
Credentials by Secret reference: the Redis URL, the S3 keys and every AI provider's key. The API,
the controller and the pool workers get them (a pool worker runs jobs of every type and provider).
*/}}
{{- define "media-service.secretEnv" -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "media-service.redisUrlSecret" . }}
      key: {{ include "media-service.redisUrlKey" . }}
{{- if include "media-service.s3HasCredentials" . }}
- name: S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "media-service.s3Secret" . }}
      key: {{ .Values.s3.accessKeyIdKey }}
- name: S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "media-service.s3Secret" . }}
      key: {{ .Values.s3.secretAccessKeyKey }}
{{- end }}
{{- if include "media-service.aiHasKey" . }}
- name: AI_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "media-service.aiSecret" . }}
      key: {{ .Values.ai.existingSecretKey }}
{{- end }}
{{- range $name, $ref := include "media-service.aiProviderKeys" . | fromJson }}
- name: {{ $ref.env }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.secret }}
      key: {{ $ref.key | quote }}
{{- end }}
{{- end -}}

{{/* Environment shared by the API and the controller: credentials by Secret reference. */}}
{{- define "media-service.credentialsEnv" -}}
{{ include "media-service.secretEnv" . }}
- name: CONFIG_FILE
  value: /etc/media-service/config.yaml
- name: TMPDIR
  value: /tmp
{{- end -}}

{{- define "media-service.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}

{{- define "media-service.containerSecurityContext" -}}
{{- toYaml .Values.securityContext -}}
{{- end -}}

{{/* NetworkPolicy egress rules of pods that reach DNS, S3 and Redis only. */}}
{{- define "media-service.egressDnsS3Redis" -}}
{{- $np := .Values.networkPolicy }}
# DNS, wherever the cluster's resolver is.
- ports:
    - { protocol: UDP, port: 53 }
    - { protocol: TCP, port: 53 }
# S3.
- ports:
    {{- range $np.s3Ports }}
    - { protocol: TCP, port: {{ . }} }
    {{- end }}
  {{- with $np.s3Peers }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
# Redis.
- ports:
    - { protocol: TCP, port: {{ $np.redisPort }} }
  to:
    {{- if .Values.redis.enabled }}
    - podSelector:
        matchLabels:
          {{- include "media-service.componentSelector" (dict "root" . "component" "redis") | nindent 10 }}
    {{- end }}
    {{- with $np.redisPeers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/* NetworkPolicy egress rule to the AI providers, when any is configured (runner and pool pods). */}}
{{- define "media-service.egressAi" -}}
{{- $np := .Values.networkPolicy }}
{{- if or .Values.ai.baseUrl .Values.ai.providers }}
# The AI providers.
- ports:
    {{- range $np.aiPorts }}
    - { protocol: TCP, port: {{ . }} }
    {{- end }}
  {{- with $np.aiPeers }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
The warm runner pool's Redis list (core/store/keys.ts): "{<redis.key_prefix>}:pool:queue", with
the key prefix config.extra may set over config.keyPrefix.
*/}}
{{- define "media-service.poolListName" -}}
{{- $prefix := .Values.config.keyPrefix -}}
{{- with .Values.config.extra -}}{{- $prefix = dig "redis" "key_prefix" $prefix . -}}{{- end -}}
{{- printf "{%s}:pool:queue" $prefix -}}
{{- end -}}

{{/* Which autoscaler owns the pool's replica count: "keda", "hpa" or "" (pool.replicas). */}}
{{- define "media-service.poolAutoscaler" -}}
{{- $a := .Values.pool.autoscaling -}}
{{- if and $a.keda.enabled $a.hpa.enabled -}}
{{- fail "pool.autoscaling: keda.enabled and hpa.enabled are mutually exclusive (KEDA manages an HPA of its own); enable one" -}}
{{- end -}}
{{- if $a.keda.enabled }}keda{{ else if $a.hpa.enabled }}hpa{{ end -}}
{{- end -}}

{{/* Where a replicated component's pods go: its affinity, else the podAntiAffinity preset (soft:
  preferred, hard: required, one replica a node on kubernetes.io/hostname), and its
  topologySpreadConstraints, each without labelSelector given the component's labels (and
  pod-template-hash as a match label key, so a rollout's old pods do not count against the new).
  (dict "root" $ "component" "api" "affinity" … "podAntiAffinity" … "topologySpreadConstraints" …) */}}
{{- define "media-service.placement" -}}
{{- $selector := include "media-service.componentSelector" (dict "root" .root "component" .component) | fromYaml -}}
{{- if .affinity }}
affinity:
  {{- toYaml .affinity | nindent 2 }}
{{- else if eq .podAntiAffinity "hard" }}
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- toYaml $selector | nindent 12 }}
{{- else if eq .podAntiAffinity "soft" }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- toYaml $selector | nindent 14 }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- range . }}
  {{- $c := deepCopy . }}
  {{- if not (hasKey $c "labelSelector") }}
  {{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) }}
  {{- if not (hasKey $c "matchLabelKeys") }}{{ $_ := set $c "matchLabelKeys" (list "pod-template-hash") }}{{ end }}
  {{- end }}
  - {{- toYaml $c | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
