"""``qmlsim.tfq.differentiators``: TensorFlow Quantum 0.7.6's differentiator
classes, with TFQ's signatures, on qmlsim's ops.

- ``Adjoint`` and ``ParameterShift``: the engine's exact adjoint gradient (a
  vector-Jacobian product in one backward sweep per circuit). For analytic
  expectation values TFQ's parameter shift is exact too, so the numbers agree
  (TFQ computes in float32); on sampled expectation values TFQ's parameter
  shift estimates, from shots, the gradient that this gives exactly.
  ``Adjoint`` refuses sampled ops, as TFQ's does.
- ``LinearCombination``, ``ForwardDifference``, ``CentralDifference``: as TFQ
  computes them, from expectation values at shifted symbol values (the same
  stencils, weights and ``get_gradient_circuits`` layout), for users who
  compare finite differences.
- ``Differentiator``: the base class for a user's own, as TFQ's: subclasses
  give ``get_gradient_circuits`` (or override ``differentiate_analytic`` /
  ``differentiate_sampled``), and ``generate_differentiable_op`` attaches one
  to an op (once; ``refresh`` frees it for another).
"""
import abc
import inspect
import math
import numbers

import numpy as np
import tensorflow as tf


def _check_signature(op, expected, what):
    names = list(inspect.signature(op).parameters)
    for key in expected:
        if not any(key in n for n in names):
            raise ValueError(f"unexpected signature for {what}: it has {names}, the signature "
                             f"should contain {expected}")


class Differentiator(metaclass=abc.ABCMeta):
    """TFQ's ``tfq.differentiators.Differentiator``."""

    def generate_differentiable_op(self, *, sampled_op=None, analytic_op=None):
        """``analytic_op(programs, symbol_names, symbol_values, pauli_sums)`` or
        ``sampled_op(..., num_samples)`` with this differentiator as its
        gradient. One op per differentiator until ``refresh()``."""
        if hasattr(self, "expectation_op"):
            raise TypeError("This differentiator is already used for other op by calling "
                            "generate_differentiable_op before. You need to call `refresh()` "
                            "to reuse this differentiator with another op.")
        if (sampled_op is None) == (analytic_op is None):
            raise ValueError("generate_differentiable_op takes exactly one of sampled_op and "
                             "analytic_op")
        op = analytic_op if analytic_op is not None else sampled_op
        if not callable(op):
            raise TypeError("Provided arguments must be callable tensorflow ops.")
        expected = ["programs", "symbol_names", "symbol_values", "pauli_sums"]
        if analytic_op is not None:
            _check_signature(op, expected, "analytic_op")
            if "num_samples" in inspect.signature(op).parameters:
                raise ValueError("found num_samples in analytic_op: pass a sampled op as "
                                 "sampled_op")
        else:
            _check_signature(op, expected + ["num_samples"], "sampled_op")
        self.expectation_op = op

        if analytic_op is not None:
            @tf.custom_gradient
            def analytic(programs, symbol_names, symbol_values, pauli_sums):
                forward = analytic_op(programs, symbol_names, symbol_values, pauli_sums)

                def gradient(grad):
                    return None, None, self.differentiate_analytic(
                        programs, symbol_names, symbol_values, pauli_sums, forward, grad), None

                return forward, gradient

            return analytic

        @tf.custom_gradient
        def sampled(programs, symbol_names, symbol_values, pauli_sums, num_samples):
            forward = sampled_op(programs, symbol_names, symbol_values, pauli_sums, num_samples)

            def gradient(grad):
                return None, None, self.differentiate_sampled(
                    programs, symbol_names, symbol_values, pauli_sums, num_samples, forward,
                    grad), None, None

            return forward, gradient

        return sampled

    def refresh(self):
        """Frees this differentiator to be attached to another op."""
        if hasattr(self, "expectation_op"):
            del self.expectation_op
        return self

    @abc.abstractmethod
    def get_gradient_circuits(self, programs, symbol_names, symbol_values):
        """(batch_programs [batch, m], new_symbol_names [n], batch_symbol_values
        [batch, m, n], batch_weights [batch, n_symbols, k], batch_mapper
        [batch, n_symbols, k]): the gradient of symbol s of program b is
        sum_j weights[b, s, j] * <ops> of batch_programs[b, mapper[b, s, j]]."""

    def differentiate_analytic(self, programs, symbol_names, symbol_values, pauli_sums,
                               forward_pass_vals, grad):
        """The gradient with respect to symbol_values ([batch, n_symbols]) of
        sum(grad * expectation values), from get_gradient_circuits."""
        return self._combine(programs, symbol_names, symbol_values, pauli_sums, grad,
                             lambda p, n, v, o, _: self.expectation_op(p, n, v, o), None)

    def differentiate_sampled(self, programs, symbol_names, symbol_values, pauli_sums,
                              num_samples, forward_pass_vals, grad):
        """As differentiate_analytic, each circuit sampled num_samples times."""
        return self._combine(programs, symbol_names, symbol_values, pauli_sums, grad,
                             self.expectation_op, num_samples)

    def _combine(self, programs, symbol_names, symbol_values, pauli_sums, grad, run,
                 num_samples):
        symbol_values = tf.cast(symbol_values, tf.float32)
        if symbol_values.shape.num_elements() == 0 or pauli_sums.shape.num_elements() == 0:
            return tf.zeros_like(symbol_values)
        programs_b, names, values_b, weights, mapper = self.get_gradient_circuits(
            programs, symbol_names, symbol_values)
        batch, m = tf.shape(programs_b)[0], tf.shape(programs_b)[1]
        n_ops = tf.shape(pauli_sums)[1]
        ops = tf.reshape(tf.tile(pauli_sums[:, None, :], [1, m, 1]), [-1, n_ops])
        args = [tf.reshape(programs_b, [-1]), names,
                tf.reshape(values_b, [batch * m, tf.shape(names)[0]]), ops]
        if num_samples is not None:
            args.append(tf.reshape(tf.tile(num_samples[:, None, :], [1, m, 1]), [-1, n_ops]))
        else:
            args.append(None)
        values = tf.reshape(run(*args), [batch, m, n_ops])
        picked = tf.gather(values, mapper, batch_dims=1)  # [batch, n_symbols, k, n_ops]
        jacobian = tf.einsum("bsk,bsko->bso", tf.cast(weights, tf.float32), picked)
        return tf.einsum("bso,bo->bs", jacobian, tf.cast(grad, tf.float32))


class LinearCombination(Differentiator):
    """TFQ's ``LinearCombination(weights, perturbations)``: d f / d s =
    sum_i weights[i] f(s + perturbations[i])."""

    def __init__(self, weights, perturbations):
        for what, seq in (("weights", weights), ("perturbations", perturbations)):
            if not isinstance(seq, (np.ndarray, list, tuple)):
                raise TypeError(f"{what} must be a numpy array, list or tuple. Got {type(seq)}")
            if not all(isinstance(x, numbers.Real) for x in seq):
                raise TypeError(f"Each element of {what} must be a real number.")
        if len(weights) != len(perturbations):
            raise ValueError("weights and perturbations must have the same length.")
        if len(perturbations) < 2:
            raise ValueError("Must specify at least two perturbations.")
        if len(set(perturbations)) != len(perturbations):
            raise ValueError("All values in perturbations must be unique.")
        self.weights = tf.constant(weights, dtype=tf.float32)  # as TFQ keeps them
        self.perturbations = tf.constant(perturbations, dtype=tf.float32)
        self.n_perturbations = tf.constant(len(perturbations))
        # The unshifted circuit (a zero perturbation) runs once for all symbols.
        pairs = [(float(w), float(p)) for w, p in zip(weights, perturbations)]
        self._zero = [w for w, p in pairs if p == 0]
        self._shifted = [(w, p) for w, p in pairs if p != 0]

    def get_gradient_circuits(self, programs, symbol_names, symbol_values):
        """Programs [batch, m]: the unshifted one first where a perturbation is
        0, then per symbol each nonzero shift of it alone."""
        programs = tf.convert_to_tensor(programs)
        symbol_values = tf.cast(symbol_values, tf.float32)
        n_symbols = tf.shape(symbol_names)[0]
        n_programs = tf.shape(programs)[0]
        shifts = tf.constant([p for _, p in self._shifted], dtype=tf.float32)
        k = len(self._shifted)
        eye = tf.eye(n_symbols, dtype=tf.float32)
        rows = tf.reshape(eye[:, None, :] * shifts[None, :, None], [n_symbols * k, n_symbols])
        mapper = tf.reshape(tf.range(n_symbols * k, dtype=tf.int32), [n_symbols, k])
        weights = tf.tile(tf.constant([w for w, _ in self._shifted], dtype=tf.float32)[None, :],
                          [n_symbols, 1])
        if self._zero:
            rows = tf.concat([tf.zeros([1, n_symbols]), rows], 0)
            mapper = tf.concat([tf.zeros([n_symbols, 1], dtype=tf.int32), mapper + 1], 1)
            weights = tf.concat([tf.fill([n_symbols, 1], self._zero[0]), weights], 1)
        m = tf.shape(rows)[0]
        return (tf.tile(programs[:, None], [1, m]), tf.identity(symbol_names),
                symbol_values[:, None, :] + rows[None, :, :],
                tf.tile(weights[None], [n_programs, 1, 1]),
                tf.tile(mapper[None], [n_programs, 1, 1]))


class ForwardDifference(LinearCombination):
    """TFQ's ``ForwardDifference(error_order=1, grid_spacing=0.001)``: the
    one-sided stencil of that error order (f(x), f(x + h), ..., f(x + order h))."""

    def __init__(self, error_order=1, grid_spacing=0.001):
        if not (isinstance(error_order, numbers.Integral) and error_order > 0):
            raise ValueError("error_order must be a positive integer.")
        if not (isinstance(grid_spacing, numbers.Real) and grid_spacing > 0):
            raise ValueError("grid_spacing must be a positive real number.")
        weights = []
        for point in range(error_order + 1):
            if point == 0:
                w = -sum(1 / j for j in range(1, error_order + 1))
            else:
                w = ((-1) ** (point + 1) * math.factorial(error_order)) / (
                    point * math.factorial(error_order - point) * math.factorial(point))
            weights.append(w / grid_spacing)
        super().__init__(weights, [p * grid_spacing for p in range(error_order + 1)])


class CentralDifference(LinearCombination):
    """TFQ's ``CentralDifference(error_order=2, grid_spacing=0.001)``: the
    symmetric stencil of that (even) error order."""

    def __init__(self, error_order=2, grid_spacing=0.001):
        if not (isinstance(error_order, numbers.Integral) and error_order > 0
                and error_order % 2 == 0):
            raise ValueError("error_order must be a positive, even integer.")
        if not (isinstance(grid_spacing, numbers.Real) and grid_spacing > 0):
            raise ValueError("grid_spacing must be a positive real number.")
        half = error_order // 2
        points = [p for p in range(-half, half + 1) if p != 0]
        weights = []
        for k in points:
            w = (-1) ** (abs(k) + 1) * math.factorial(half) ** 2 / (
                k * math.factorial(half - abs(k)) * math.factorial(half + abs(k)))
            weights.append(w / grid_spacing)
        super().__init__(weights, [p * grid_spacing for p in points])


class _Exact(Differentiator):
    """The engine's adjoint VJP of qmlsim's own expectation ops."""

    def get_gradient_circuits(self, programs, symbol_names, symbol_values):
        raise NotImplementedError(f"{type(self).__name__} on qmlsim computes the gradient in "
                                  "one adjoint sweep, without gradient circuits")

    def _vjp(self, programs, symbol_names, symbol_values, pauli_sums, grad):
        vjp = getattr(self.expectation_op, "_qmlsim_vjp", None)
        if vjp is None:
            raise ValueError(f"{type(self).__name__}: differentiates qmlsim.tfq's expectation "
                             "ops (get_expectation_op, get_sampled_expectation_op)")
        return vjp(programs, symbol_names, symbol_values, pauli_sums, grad)

    def differentiate_analytic(self, programs, symbol_names, symbol_values, pauli_sums,
                               forward_pass_vals, grad):
        return self._vjp(programs, symbol_names, symbol_values, pauli_sums, grad)

    def differentiate_sampled(self, programs, symbol_names, symbol_values, pauli_sums,
                              num_samples, forward_pass_vals, grad):
        return self._vjp(programs, symbol_names, symbol_values, pauli_sums, grad)


class Adjoint(_Exact):
    """TFQ's ``Adjoint``: the exact gradient of analytic expectation values."""

    def generate_differentiable_op(self, *, sampled_op=None, analytic_op=None):
        if sampled_op is not None:
            raise ValueError("sample base backends are not supported with the Adjoint "
                             "differentiator")
        return super().generate_differentiable_op(analytic_op=analytic_op)


class ParameterShift(_Exact):
    """TFQ's ``ParameterShift``: exact for analytic expectation values, which
    is what the engine's adjoint gives in one sweep; for sampled ones, the
    exact gradient that TFQ's shifted, sampled circuits estimate."""
