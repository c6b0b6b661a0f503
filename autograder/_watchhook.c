/* The library watch's profile function, filtered in C (worker.Recorder._profile).

   A watched call hands every profile event to Recorder._profile, a Python function: about a thousand events for
   one constructor of the attention lab's MultiHeadAttention, nearly all of them events that function returns from
   at once (a return, a call of code no watch looks for, a C function no watch looks for). This filter answers
   those here and passes every other event to the Python function, unchanged, as sys.setprofile's own trampoline
   would: what the watch sees is decided there, never here. Events skipped are exactly those for which
   Recorder._profile does nothing:
     - "return", "c_return", "c_exception";
     - "call" of a code object that is not nn.Module._call_impl, does not start at a first line of the watches'
       codes, whose co_names is not (by length, then by equality) one of the watches' name tuples, has fewer than
       `nameset_min` names, and whose file name does not start with the generated-code prefix;
     - "c_call" of a builtin that is not one of the watches' builtins or thread starts, whose __name__ is a str
       without a "." and not a kernel name, or that has no __name__ (AttributeError).
   Anything else, or anything that fails here, goes to the Python function. Nothing here runs code of the
   submission's (a profile function's callees make no profile events): no code object is hashed or compared here, and
   the names read are exact str and tuple objects.

   install() takes the watches' constants once per process (the worker module calls it at import, in the zygote,
   before any submission's code runs); it refuses a second call, so those cannot be replaced afterwards.
   setprofile(fn) is sys.setprofile(fn) with this filter in front: sys.getprofile() returns fn, and CPython raises
   the audit event "sys.setprofile" for it as for any other switch (worker._profile_audit). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

static int installed = 0;
static PyObject *lines, *prints, *sizes, *call_impl, *c_calls, *kernels, *generated, *name_key;
static Py_ssize_t nameset_min;
static PyObject *call_str, *c_call_str;

/* 1: pass the event on; 0: skip it */
static int
wanted_call(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);  /* (a new reference) */
    int want = 1;
    if ((PyObject *)code == call_impl)
        goto done;
    PyObject *first = PyLong_FromLong(code->co_firstlineno);
    if (first == NULL) {
        PyErr_Clear();
        goto done;
    }
    /* (a first line of the watches' codes: handed on without comparing the code here, since hashing a code object
       hashes its constants, which code.replace can make objects of the submission's; Recorder._profile looks at
       them first, _plain_code) */
    int r = PySet_Contains(lines, first);
    Py_DECREF(first);
    if (r != 0) {
        if (r < 0)
            PyErr_Clear();
        goto done;
    }
    PyObject *names = code->co_names;
    if (names == NULL || !PyTuple_CheckExact(names))
        goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n >= nameset_min)
        goto done;
    PyObject *size = PyLong_FromSsize_t(n);
    if (size == NULL) {
        PyErr_Clear();
        goto done;
    }
    r = PySet_Contains(sizes, size);
    Py_DECREF(size);
    if (r != 0 && (r < 0 || (r = PySet_Contains(prints, names)) != 0)) {
        if (r < 0)
            PyErr_Clear();
        goto done;
    }
    PyObject *file = code->co_filename;
    if (file == NULL || !PyUnicode_CheckExact(file))
        goto done;
    r = PyUnicode_Tailmatch(file, generated, 0, PY_SSIZE_T_MAX, -1);
    if (r != 0) {
        if (r < 0)
            PyErr_Clear();
        goto done;
    }
    want = 0;
done:
    Py_DECREF(code);
    return want;
}

static int
wanted_c_call(PyObject *arg)
{
    int r = PySet_Contains(c_calls, arg);
    if (r != 0) {
        if (r < 0)
            PyErr_Clear();
        return 1;
    }
    PyObject *name = PyObject_GetAttr(arg, name_key);
    if (name == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            return 0;  /* (name None: not a kernel, and not a str) */
        }
        PyErr_Clear();
        return 1;
    }
    int want = 1;
    if (PyUnicode_CheckExact(name)) {
        r = PySet_Contains(kernels, name);
        if (r == 0) {
            Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, PY_SSIZE_T_MAX, 1);
            if (dot == -1)
                want = 0;
            else if (dot == -2)
                PyErr_Clear();
        }
        else if (r < 0)
            PyErr_Clear();
    }
    Py_DECREF(name);
    return want;
}

static int
trampoline(PyObject *fn, PyFrameObject *frame, int what, PyObject *arg)
{
    PyObject *event;
    if (what == PyTrace_CALL) {
        if (!wanted_call(frame))
            return 0;
        event = call_str;
    }
    else if (what == PyTrace_C_CALL) {
        if (arg == NULL || !wanted_c_call(arg))
            return 0;
        event = c_call_str;
    }
    else
        return 0;
    PyObject *stack[3] = {(PyObject *)frame, event, arg != NULL ? arg : Py_None};
    PyObject *result = PyObject_Vectorcall(fn, stack, 3, NULL);
    if (result == NULL) {  /* as sys.setprofile's trampoline: a profile function that raises is taken off */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyEval_SetProfile(NULL, NULL);
        PyErr_Restore(type, value, traceback);
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

static PyObject *
install(PyObject *self, PyObject *args)
{
    PyObject *a[7];
    if (installed) {
        PyErr_SetString(PyExc_RuntimeError, "the watch's constants are set once per process");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!OO!O!nU:install", &PyFrozenSet_Type, &a[0], &PyFrozenSet_Type, &a[1],
                          &PyFrozenSet_Type, &a[2], &a[3], &PyFrozenSet_Type, &a[4], &PyFrozenSet_Type, &a[5],
                          &nameset_min, &a[6]))
        return NULL;
    name_key = PyUnicode_InternFromString("__name__");
    call_str = PyUnicode_InternFromString("call");
    c_call_str = PyUnicode_InternFromString("c_call");
    if (name_key == NULL || call_str == NULL || c_call_str == NULL)
        return NULL;
    for (int i = 0; i < 7; i++)
        Py_INCREF(a[i]);
    lines = a[0]; prints = a[1]; sizes = a[2]; call_impl = a[3]; c_calls = a[4]; kernels = a[5]; generated = a[6];
    installed = 1;
    Py_RETURN_NONE;
}

static PyObject *
setprofile(PyObject *self, PyObject *fn)
{
    if (fn == Py_None) {
        PyEval_SetProfile(NULL, NULL);
    }
    else {
        if (!installed) {
            PyErr_SetString(PyExc_RuntimeError, "install() first");
            return NULL;
        }
        PyEval_SetProfile(trampoline, fn);
    }
    if (PyErr_Occurred())  /* (an audit hook that refused the switch) */
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS,
     "install(lines, prints, sizes, call_impl, c_calls, kernels, nameset_min, generated): once."},
    {"setprofile", setprofile, METH_O, "sys.setprofile(fn), with the watch's filter in front of fn."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_watchhook", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__watchhook(void)
{
    return PyModule_Create(&module);
}
