//! Python values <-> `ddblock::PhpValue`, and the small result types.
//!
//! Python → PHP: None, bool, int (64-bit), float, str (UTF-8), bytes/bytearray (a binary PHP
//! string), list/tuple (a PHP list), dict (int or str keys: a PHP array in insertion order),
//! `ddblock.PhpObject`. PHP → Python: strings come back as `str` when they are UTF-8, else
//! `bytes`; an array whose keys are 0..n in order comes back as a `list`, any other as a `dict`.

use ddblock::codec::{Limits, ObjectKind};
use ddblock::format::input::{ttl_from_f64, Amount};
use ddblock::{Error, ManyEntry, PhpKey, PhpObject, PhpValue};
use ddblock_admin::{ClockReading, CreateTableReport, DoctorReport, TtlState};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};

use crate::errors::{self, codec_error, type_error};

static PHP_OBJECT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn php_object_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    PHP_OBJECT.import(py, "ddblock._values", "PhpObject")
}

/// Deepest nesting accepted, the decoder's own limit: anything deeper could not be read back.
fn max_depth() -> usize {
    Limits::default().max_depth
}

/// A Python value as a PHP value.
pub fn to_php(obj: &Bound<'_, PyAny>) -> PyResult<PhpValue> {
    to_php_at(obj, 0)
}

fn to_php_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<PhpValue> {
    if obj.is_none() {
        return Ok(PhpValue::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(PhpValue::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        return int_value(i).map(PhpValue::Int);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(PhpValue::Float(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(PhpValue::String(s.to_cow()?.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(PhpValue::String(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(PhpValue::String(b.to_vec()));
    }
    if depth >= max_depth() {
        return Err(codec_error(format!(
            "value nested deeper than {} levels (a cycle?); PHP values read back by ddblock are at most that deep",
            max_depth()
        )));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let items = l
            .iter()
            .map(|v| to_php_at(&v, depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(PhpValue::list(items));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        let items = t
            .iter()
            .map(|v| to_php_at(&v, depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(PhpValue::list(items));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return entries(d, depth).map(PhpValue::Array);
    }
    let py = obj.py();
    if obj.is_instance(php_object_class(py)?)? {
        return object(obj, depth).map(PhpValue::Object);
    }
    Err(type_error(format!(
        "cannot store a value of type {}: use None, bool, int, float, str, bytes, list, tuple, dict \
         or ddblock.PhpObject",
        obj.get_type().name()?
    )))
}

fn int_value(i: &Bound<'_, PyInt>) -> PyResult<i64> {
    i.extract::<i64>().map_err(|_| {
        codec_error(format!(
            "int {i} does not fit PHP's 64-bit int (-2**63 .. 2**63-1); store it as a str or float"
        ))
    })
}

fn key(k: &Bound<'_, PyAny>) -> PyResult<PhpKey> {
    if let Ok(i) = k.cast::<PyInt>() {
        // bool is an int: PHP, too, turns true/false keys into 1/0.
        return int_value(i).map(PhpKey::Int);
    }
    if let Ok(s) = k.cast::<PyString>() {
        return Ok(PhpKey::Str(s.to_cow()?.as_bytes().to_vec()));
    }
    if let Ok(b) = k.cast::<PyBytes>() {
        return Ok(PhpKey::Str(b.as_bytes().to_vec()));
    }
    Err(type_error(format!(
        "cannot use a key of type {} in a PHP array: use int or str",
        k.get_type().name()?
    )))
}

fn entries(d: &Bound<'_, PyDict>, depth: usize) -> PyResult<Vec<(PhpKey, PhpValue)>> {
    d.iter()
        .map(|(k, v)| Ok((key(&k)?, to_php_at(&v, depth + 1)?)))
        .collect()
}

fn object(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<PhpObject> {
    let class: String = obj.getattr("class_name")?.extract()?;
    let case: Option<String> = obj.getattr("enum_case")?.extract()?;
    let payload: Option<Vec<u8>> = obj.getattr("payload")?.extract()?;
    let props = obj.getattr("properties")?;
    let props = props
        .cast::<PyDict>()
        .map_err(|_| type_error("PhpObject.properties must be a dict"))?;
    let (kind, properties) = match (case, payload) {
        (Some(case), _) => (ObjectKind::Enum(case), Vec::new()),
        (None, Some(payload)) => (ObjectKind::Custom(payload), Vec::new()),
        (None, None) => (ObjectKind::Object, entries(props, depth)?),
    };
    Ok(PhpObject {
        class,
        kind,
        properties,
    })
}

/// A PHP value as a Python value.
pub fn to_py<'py>(py: Python<'py>, v: &PhpValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        PhpValue::Null => py.None().into_bound(py),
        PhpValue::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        PhpValue::Int(i) => i.into_pyobject(py)?.into_any(),
        PhpValue::Float(f) => PyFloat::new(py, *f).into_any(),
        PhpValue::String(b) => bytes_to_py(py, b),
        PhpValue::Array(entries) => {
            let is_list = entries
                .iter()
                .enumerate()
                .all(|(i, (k, _))| *k == PhpKey::Int(i as i64));
            if is_list {
                let items = entries
                    .iter()
                    .map(|(_, v)| to_py(py, v))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any()
            } else {
                dict(py, entries)?.into_any()
            }
        }
        PhpValue::Object(o) => {
            let (props, case, payload) = match &o.kind {
                ObjectKind::Object => (dict(py, &o.properties)?, None, None),
                ObjectKind::Custom(p) => (PyDict::new(py), None, Some(PyBytes::new(py, p))),
                ObjectKind::Enum(c) => (PyDict::new(py), Some(c.as_str()), None),
            };
            php_object_class(py)?.call1((o.class.as_str(), props, case, payload))?
        }
    })
}

fn bytes_to_py<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(b) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, b).into_any(),
    }
}

fn dict<'py>(py: Python<'py>, entries: &[(PhpKey, PhpValue)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in entries {
        let k = match k {
            PhpKey::Int(i) => i.into_pyobject(py)?.into_any(),
            PhpKey::Str(s) => bytes_to_py(py, s),
        };
        d.set_item(k, to_py(py, v)?)?;
    }
    Ok(d)
}

/// An optional PHP value crossing back (`None` when missing).
pub struct OptPhp(pub Option<PhpValue>);

impl<'py> IntoPyObject<'py> for OptPhp {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;
    const OUTPUT_TYPE: pyo3::inspect::PyStaticExpr = pyo3::type_hint_identifier!("typing", "Any");

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        match self.0 {
            Some(v) => to_py(py, &v),
            None => Ok(py.None().into_bound(py)),
        }
    }
}

/// `many()`'s answer: a dict in input order: the value, `None` for a missing key, or a
/// `CodecError` instance for a key whose item is not a Laravel value.
pub struct Many(pub Vec<(String, ManyEntry)>);

impl<'py> IntoPyObject<'py> for Many {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let d = PyDict::new(py);
        for (k, v) in self.0 {
            match v {
                Ok(v) => d.set_item(k, OptPhp(v).into_pyobject(py)?)?,
                Err(e) => d.set_item(k, errors::to_py(e).into_value(py))?,
            }
        }
        Ok(d.into_any())
    }
}

/// A ttl in whole seconds from a Python int or float (the core's rule for fractions).
pub fn ttl(v: &Bound<'_, PyAny>) -> PyResult<i64> {
    if v.cast::<PyBool>().is_err() {
        if let Ok(i) = v.cast::<PyInt>() {
            return i.extract::<i64>().map_err(|_| {
                errors::to_py(Error::InvalidTtl {
                    ttl: 0,
                    reason: format!("{i} seconds is out of range"),
                })
            });
        }
        if let Ok(f) = v.cast::<PyFloat>() {
            return ttl_from_f64(f.value()).map_err(errors::to_py);
        }
    }
    Err(errors::to_py(Error::InvalidTtl {
        ttl: 0,
        reason: format!(
            "a ttl is a whole number of seconds (int), not {}",
            v.get_type().name()?
        ),
    }))
}

/// A compare-and-set version from a Python int (or a whole float), by the core's rule.
pub fn version(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.cast::<PyBool>().is_err() {
        if let Ok(i) = v.cast::<PyInt>() {
            let n = i.extract::<i64>().unwrap_or(-1);
            return ddblock::cas::version_from_i64(n).map_err(errors::to_py);
        }
        if let Ok(f) = v.cast::<PyFloat>() {
            return ddblock::cas::version_from_f64(f.value()).map_err(errors::to_py);
        }
    }
    Err(type_error(format!(
        "version must be an int (from get_versioned) or a Versioned, not {}",
        v.get_type().name()?
    )))
}

/// An increment amount from a Python int or float.
pub fn amount(v: &Bound<'_, PyAny>) -> PyResult<Amount> {
    if v.cast::<PyBool>().is_err() {
        if let Ok(i) = v.cast::<PyInt>() {
            return int_value(i).map(Amount::Int);
        }
        if let Ok(f) = v.cast::<PyFloat>() {
            return Amount::from_f64(f.value()).map_err(errors::to_py);
        }
    }
    Err(type_error(format!(
        "the amount to increment by must be an int or a float, not {}",
        v.get_type().name()?
    )))
}

fn ttl_state<'py>(py: Python<'py>, t: &TtlState) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("state", t.as_str())?;
    d.set_item("attribute", t.attribute())?;
    if let TtlState::Unknown { reason } = t {
        d.set_item("reason", reason)?;
    }
    Ok(d)
}

/// `create_table()`'s report, crossing back as a dict.
pub struct CreateReport(pub CreateTableReport);

impl<'py> IntoPyObject<'py> for CreateReport {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let r = self.0;
        let d = PyDict::new(py);
        d.set_item("created", r.created)?;
        d.set_item("ready", r.ready())?;
        d.set_item("status", &r.status)?;
        d.set_item("key_schema_problem", &r.key_schema_problem)?;
        d.set_item("ttl", r.ttl.as_ref().map(|t| ttl_state(py, t)).transpose()?)?;
        d.set_item("ttl_changed", r.ttl_changed)?;
        Ok(d.into_any())
    }
}

/// `doctor()`'s report, crossing back as a dict.
pub struct Doctor(pub DoctorReport);

impl<'py> IntoPyObject<'py> for Doctor {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let r = self.0;
        let d = PyDict::new(py);
        d.set_item("healthy", r.healthy())?;
        let checks = PyList::empty(py);
        for c in &r.checks {
            let cd = PyDict::new(py);
            cd.set_item("id", c.id.as_str())?;
            cd.set_item("status", c.status.as_str())?;
            cd.set_item("detail", &c.detail)?;
            checks.append(cd)?;
        }
        d.set_item("checks", checks)?;
        d.set_item("table_status", &r.table_status)?;
        d.set_item("billing_mode", &r.billing_mode)?;
        // This host's clock minus DynamoDB's, in seconds (an interval: `Date` has whole seconds).
        let clock = match r.clock {
            None => None,
            Some(reading) => {
                let cd = PyDict::new(py);
                cd.set_item("allowed", r.clock_allowed)?;
                match reading {
                    ClockReading::Measured(o) => {
                        cd.set_item("offset", o.estimate())?;
                        cd.set_item("low", o.low)?;
                        cd.set_item("high", o.high)?;
                        cd.set_item("answers", o.samples)?;
                    }
                    ClockReading::NoDate | ClockReading::Inconsistent => {
                        cd.set_item("unmeasured", reading.unmeasured())?
                    }
                }
                Some(cd)
            }
        };
        d.set_item("clock", clock)?;
        d.set_item("ttl", r.ttl.as_ref().map(|t| ttl_state(py, t)).transpose()?)?;
        let counts = match &r.counts {
            Some(c) => {
                let cd = PyDict::new(py);
                for (k, v) in [
                    ("scanned", c.scanned),
                    ("items", c.items),
                    ("locks", c.locks),
                    ("cache", c.cache),
                    ("other", c.other),
                    ("expired_but_present", c.expired_but_present),
                    ("default_ttl_locks", c.default_ttl_locks),
                    ("invalid_expiry", c.invalid_expiry),
                    ("skipped", c.skipped),
                ] {
                    cd.set_item(k, v)?;
                }
                cd.into_any()
            }
            None => py.None().into_bound(py),
        };
        d.set_item("counts", counts)?;
        // With the s3 lock backend: the bucket probed (its results are the `s3_*` checks).
        let s3 = match &r.s3 {
            Some(p) => {
                let sd = PyDict::new(py);
                sd.set_item("bucket", &p.bucket)?;
                sd.set_item("scratch_key", &p.scratch_key)?;
                sd.set_item("cleaned_up", p.cleaned_up)?;
                sd.into_any()
            }
            None => py.None().into_bound(py),
        };
        d.set_item("s3", s3)?;
        Ok(d.into_any())
    }
}
