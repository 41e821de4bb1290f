# Running qmlsim where users run it. Site values live in deploy/k8s/site/kustomization.yaml
# (namespace, images, workers, storage); IMAGE and TAG below name the images to build.
#   make image            build and push the CPU image (IMAGE_KIND=cuda for the GPU one)
#   make training         shared volume + MPIJob (needs the Kubeflow MPI Operator)
#   make tensorboard      TensorBoard Deployment + Service; then make tensorboard-ui
#   make inference        the inference Job on the trained run
#   make status | logs | delete-training | delete-inference | delete-tensorboard
#   make render | validate    offline: the manifests as applied, and their checks
IMAGE ?= registry.example.com/qmlsim
IMAGE_KIND ?= cpu
DOCKER ?= docker
KUBECTL ?= kubectl
SITE ?= deploy/k8s/site
NAMESPACE ?= $(shell sed -n 's/^namespace: *//p' $(SITE)/kustomization.yaml)
RENDER = python3 deploy/k8s/render.py $(SITE)

.PHONY: image training tensorboard tensorboard-ui inference status logs delete-training \
        delete-inference delete-tensorboard render validate namespace

image:
	$(DOCKER) build -f deploy/container/Dockerfile$(if $(filter cuda,$(IMAGE_KIND)),.cuda,) \
	  -t $(IMAGE):$(IMAGE_KIND) .
	$(DOCKER) push $(IMAGE):$(IMAGE_KIND)

namespace:
	$(KUBECTL) create namespace $(NAMESPACE) --dry-run=client -o yaml | $(KUBECTL) apply -f -

training: namespace
	$(RENDER) --kind PersistentVolumeClaim,MPIJob | $(KUBECTL) apply -f -

tensorboard: namespace
	$(RENDER) --kind PersistentVolumeClaim,Deployment,Service | $(KUBECTL) apply -f -

tensorboard-ui:
	$(KUBECTL) -n $(NAMESPACE) port-forward service/qmlsim-tensorboard 6006:6006

inference: namespace
	$(RENDER) --kind Job | $(KUBECTL) apply -f -

status:
	$(KUBECTL) -n $(NAMESPACE) get mpijobs,jobs,pods,pvc,services

logs:
	$(KUBECTL) -n $(NAMESPACE) logs -f -l training.kubeflow.org/job-role=launcher --tail=100

delete-training:
	$(RENDER) --kind MPIJob | $(KUBECTL) delete --ignore-not-found -f -

delete-inference:
	$(RENDER) --kind Job | $(KUBECTL) delete --ignore-not-found -f -

delete-tensorboard:
	$(RENDER) --kind Deployment,Service | $(KUBECTL) delete --ignore-not-found -f -

render:
	@$(RENDER)

validate:
	deploy/check.sh build/release/qmlsim
